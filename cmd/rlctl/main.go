// Command rlctl is the admin CLI of the rlctl rate-limit control plane.
package main

import (
	"os"

	"github.com/rlctl/rlctl/internal/cli"
)

func main() {
	os.Exit(cli.Main())
}
