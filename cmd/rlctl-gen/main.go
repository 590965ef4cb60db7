// Command rlctl-gen writes what is generated from rlctl's command tree:
// shell completion scripts (-completions DIR) and the CLI reference
// (-docs DIR). `make completions` and `make docs` run it.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rlctl/rlctl/internal/cli/gen"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("rlctl-gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	completions := fs.String("completions", "", "write the completion scripts into this directory")
	docs := fs.String("docs", "", "write the CLI reference (Markdown) into this directory")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || (*completions == "" && *docs == "") {
		fmt.Fprintln(stderr, "usage: rlctl-gen [-completions DIR] [-docs DIR]")
		return 2
	}
	if *completions != "" {
		if err := gen.Completions(gen.Root(), *completions); err != nil {
			fmt.Fprintf(stderr, "rlctl-gen: %v\n", err)
			return 1
		}
	}
	if *docs != "" {
		if err := gen.Docs(gen.Root(), *docs); err != nil {
			fmt.Fprintf(stderr, "rlctl-gen: %v\n", err)
			return 1
		}
	}
	return 0
}
