// Package simulate is `rlctl simulate`: replay a recorded trace of calls
// against definitions offline, with the Enforcer gateways run over the
// in-memory counter store and a clock that reads the trace, and show what
// each algorithm would have allowed and denied over time.
package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/filesource"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// stdin is the file name that reads standard input.
const stdin = "-"

// Options are the inputs of simulate.
type Options struct {
	Factory *cmdutil.Factory
	// File holds the definitions (and memberships and admins), in the
	// format of rlctl apply; "-" reads stdin.
	File string
	// Trace is the trace's file; "-" reads stdin.
	Trace string
	// Format is csv or jsonl; empty picks by the name, else the content.
	Format string
	// Algorithms, when set, replays the trace once per algorithm with
	// every definition switched to it; empty replays the file as it is.
	Algorithms []string
	// Bucket is the chart's time bucket; 0 picks one (at most 60 buckets).
	Bucket time.Duration
	// SVG, when set, receives an SVG chart of admitted calls over time.
	SVG string
	// NoFloors turns off the minimum caller limits rlapi applies.
	NoFloors bool
}

// NewCmdSimulate builds `rlctl simulate`. runF replaces the run function
// in flag-parsing tests.
func NewCmdSimulate(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{Factory: f}
	cmd := &cobra.Command{
		Use:   "simulate -f FILE [--algorithms LIST] [--bucket DURATION] [--svg FILE] TRACE",
		Short: "Replay a trace of calls against definitions offline: what each algorithm allows",
		Long: `Replay a recorded trace of calls against the definitions of FILE (the format of
'rlctl apply': definitions, memberships, admins), offline: no server is involved. Every call is
decided by the same code gateways run (pkg/enforce's Enforcer over the in-memory counter store),
its clock set to the call's timestamp, so the answers are what enforcing these definitions
would have answered. Use it to pick a limit and an algorithm before you enforce them.

TRACE is CSV or JSON lines, one call per row (- reads stdin), sorted by time:

  timestamp,caller,target,tool,cost
  2026-12-01T13:00:09.250Z,user:alice,mcp_server:github,search,1
  1796130009.5,agent:ci-bot,a2a_agent:planner,,

  {"timestamp": "2026-12-01T13:00:09.25Z", "caller": "user:alice", "target": "mcp_server:github"}

timestamp is RFC 3339 (fractions allowed) or Unix seconds (fractions allowed); caller is
user:<name> or agent:<client id>; target is mcp_server:<name> or a2a_agent:<path>; tool (the
MCP tool or A2A skill) and cost (default 1) are optional. A CSV header line may name the
columns in any order; without one they are in this order. --format picks the format when
the name (.csv, .jsonl, .ndjson, .json) does not; otherwise the first character decides.
docs/algorithms.md documents the format and the JSON output.

--algorithms replays the trace once per algorithm (fixed_window, sliding_window,
token_bucket, or all), every definition switched to it: a window drops its bursts, a token
bucket keeps them (each defaulting to its limit). Without it the file is replayed as written.

The output is a table of totals per run and definition (calls, allowed, denied, the denial
rate and the first denial, as time since the trace's first call) and a chart of allowed
against denied calls per time bucket; -o json (or yaml) prints the same as one document.
--svg writes a chart of admitted calls over time, one panel per run.

A bad row stops the replay with its line and field, and an empty trace is refused (exit 2,
as a bad file is).`,
		Example: `  rlctl simulate -f limits.yaml trace.csv
  rlctl simulate -f limits.yaml --algorithms all --bucket 1s trace.jsonl
  rlctl simulate -f limits.yaml --algorithms fixed_window,token_bucket -o json trace.csv | jq '.runs[] | {name, denied}'
  zcat access.csv.gz | rlctl simulate -f limits.yaml --format csv --svg admitted.svg -`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.FlagErrorf("simulate replays one trace, a CSV or JSON Lines file or - for stdin (got %d arguments): rlctl simulate -f FILE TRACE", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Trace = args[0]
			if err := opts.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return simulateRun(cmd.Context(), opts)
		},
	}
	cmd.GroupID = "state"
	fl := cmd.Flags()
	fl.StringVarP(&opts.File, "filename", "f", "", "definitions file in the format of rlctl apply (- for stdin)")
	fl.StringVar(&opts.Format, "format", "", "trace format: csv or jsonl (default: by the file's name, else its content)")
	fl.StringSliceVar(&opts.Algorithms, "algorithms", nil, "replay once per algorithm: "+strings.Join(ratelimit.Algorithms(), ", ")+" or all (comma-separated)")
	cmdutil.DurationVar(fl, &opts.Bucket, "bucket", 0, "time bucket of the chart, e.g. 1s or 1m (default: at most 60 buckets)")
	fl.StringVar(&opts.SVG, "svg", "", "also write an SVG chart of admitted calls over time to this file")
	fl.BoolVar(&opts.NoFloors, "no-floors", false, "do not apply rlapi's minimum caller limits to the file's definitions")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("svg", "svg")
	cmdutil.EnumFlag(cmd, "format", FormatCSV, FormatJSONL)
	cmdutil.EnumFlag(cmd, "algorithms", append(ratelimit.Algorithms(), "all")...)
	cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"csv", "jsonl", "ndjson", "json"}, cobra.ShellCompDirectiveFilterFileExt
	}
	return cmd
}

// check validates the command line, before anything is read; the root
// has checked --format and each of --algorithms (cmdutil.EnumFlag).
func (o *Options) check() error {
	if o.File == "" {
		return cmdutil.FlagErrorf("-f is required: the definitions, in the format of rlctl apply (- for stdin)")
	}
	if o.File == stdin && o.Trace == stdin {
		return cmdutil.FlagErrorf("-f - and a trace of -: standard input can be read only once")
	}
	var algos []string
	for _, a := range o.Algorithms {
		a = strings.TrimSpace(a)
		switch {
		case a == "all":
			for _, x := range ratelimit.Algorithms() {
				if !slices.Contains(algos, x) {
					algos = append(algos, x)
				}
			}
		case slices.Contains(algos, a):
			return cmdutil.FlagErrorf("--algorithms: %s is named twice", a)
		default:
			algos = append(algos, a)
		}
	}
	o.Algorithms = algos
	if o.Bucket != 0 && o.Bucket < time.Millisecond {
		return cmdutil.FlagErrorf("--bucket: must be at least 1ms (got %s)", o.Bucket)
	}
	if out := o.Factory.Global.Output; out == printer.Name {
		return cmdutil.FlagErrorf("-o name: simulate names no objects; use table, json or yaml")
	}
	return nil
}

// open opens name for reading ("-": stdin); the name to use in messages
// comes back with it.
func (o *Options) open(name string) (io.ReadCloser, string, error) {
	if name == stdin {
		return io.NopCloser(o.Factory.IOStreams.In), "<stdin>", nil
	}
	fh, err := os.Open(name)
	if err != nil {
		return nil, name, &cmdutil.FlagError{Err: err}
	}
	return fh, name, nil
}

// load reads the definitions with the decoder of filesource (rlapi's
// rules: the whole file is refused on any problem, each named).
func (o *Options) load() (state enforce.State, err error) {
	r, name, err := o.open(o.File)
	if err != nil {
		return state, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return state, fmt.Errorf("read %s: %w", name, err)
	}
	floors := filesource.Floors{}
	if !o.NoFloors {
		df := validate.DefaultFloors()
		floors = filesource.Floors{User: df.User, Agent: df.Agent}
	}
	st, err := filesource.Parse(name, data, floors)
	if err != nil {
		return state, &cmdutil.FlagError{Err: err}
	}
	return st, nil
}

func simulateRun(ctx context.Context, o *Options) error {
	ios := o.Factory.IOStreams
	st, err := o.load()
	if err != nil {
		return err
	}
	runs := specs(st, o.Algorithms)
	for _, d := range st.Definitions {
		if d.Axis != ratelimit.AxisQuarantine && !d.Enabled {
			fmt.Fprintf(ios.ErrOut, "note: %s is disabled: it limits nothing in the replay\n", d.ID)
		}
	}
	if len(runs[0].defs) == 0 {
		fmt.Fprintf(ios.ErrOut, "note: %s has no enabled rate-limit definition: every call will be allowed\n", o.File)
	}
	r, name, err := o.open(o.Trace)
	if err != nil {
		return err
	}
	defer r.Close()
	rep, err := replayTrace(ctx, newTraceReader(r, name, o.Format), runs, o.Bucket)
	var re *RowError
	if errors.As(err, &re) || errors.Is(err, errNoCalls) {
		return &cmdutil.FlagError{Err: err}
	}
	if err != nil {
		return err
	}
	if w := rep.runs[0].hist.width; o.Bucket != 0 && w != o.Bucket {
		fmt.Fprintf(ios.ErrOut, "note: buckets of %s would be more than %d; counted in buckets of %s\n", o.Bucket, maxBuckets, w)
	}
	doc := rep.report(name)
	if o.SVG != "" {
		if err := writeFileAtomic(o.SVG, func(w io.Writer) error { return writeSVG(w, doc) }); err != nil {
			return err
		}
	}
	return printer.Document(ios, o.Factory.Global.Output, doc, func() error {
		if err := writeTable(ios, doc); err != nil {
			return err
		}
		return writeChart(ios, doc)
	})
}

// writeFileAtomic replaces path with what write writes, through a
// temporary file in the same directory.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
