// Package counters holds the enforcement counter commands: see one
// subject's live counters, and reset them.
package counters

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/pkg/client"
)

// Columns of a counter table.
var Columns = []printer.Column[client.Counter]{
	{Header: "KEY", Value: func(c client.Counter) string { return c.Key }},
	{Header: "WINDOW", Value: func(c client.Counter) string {
		if c.WindowSeconds == 0 {
			return "-"
		}
		return strconv.Itoa(c.WindowSeconds) + "s"
	}},
	{Header: "WINDOW-START", Value: func(c client.Counter) string { return printer.Time(&c.WindowStart) }},
	{Header: "COUNT", Value: countText},
	{Header: "EXPIRES", Value: func(c client.Counter) string { return printer.Time(&c.ExpiresAt) }},
	{Header: "DEFINITION", Wide: true, Value: func(c client.Counter) string { return c.DefinitionID }},
	{Header: "WINDOW-INDEX", Wide: true, Value: func(c client.Counter) string { return strconv.FormatInt(c.WindowIndex, 10) }},
}

func keyOf(c client.Counter) string { return c.Key }

// countText is the COUNT column: a window's count, or a token bucket's
// tokens left of its burst ("7/10 tokens"; "bucket" when the server does
// not know them). EXPIRES is then when the bucket is full again.
func countText(c client.Counter) string {
	if c.Algorithm != "token_bucket" {
		return strconv.FormatInt(c.Count, 10)
	}
	if c.Tokens == nil {
		return "bucket"
	}
	return strconv.FormatInt(*c.Tokens, 10) + "/" + strconv.FormatInt(c.Burst, 10) + " tokens"
}

// NewCmdCounters builds `rlctl counters`.
func NewCmdCounters(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "counters <command>",
		Aliases: []string{"counter"},
		Short:   "See and reset the enforcement counters of a caller, target or definition",
		Long: `The gateways count calls in fixed windows, one counter per gate: a caller's bucket
per window, a (caller, target) pair's, a target's, a shadow definition's. These
commands show the live counters of one subject, or set them back to zero so that
its current windows start afresh.

A sliding window's counters (key kind c.sw, t.sw, ...) are counts per window too. A
token bucket (c.tb, t.tb, ...) is one counter per key: COUNT shows the whole tokens it
has left of its burst when the server knows the definition it counts for ("bucket"
otherwise) and EXPIRES when it is full again; -o json has full_at, tokens and burst.
A reset fills a bucket.

Select exactly one subject:
  --caller user:<name> | agent:<client id>   its caller, caller_target and shadow counters
  --caller ip:<address>                      an anonymous caller's: an IPv4 address
                                             (ip:203.0.113.7) or an IPv6 network as the
                                             gateways key it (ip:2001:db8:1:2::/64),
                                             and that address's per-ip buckets
  --caller team:<name>                       a team's buckets (definitions per team)
  --target <entity_type>:<name>              its target and server-group counters, and
                                             every caller's counters on it
  --definition ID                            a target definition's counters; for a caller
                                             or caller_target definition the buckets of
                                             its window of every caller in its group
                                             (shared with their other definitions of
                                             that window) and its shadow counters; not
                                             the ip buckets of its network members
                                             (select those by --caller ip:<address>)

Matching is exact: --caller user:al never touches user:alice.`,
		GroupID: "core",
	}
	cmd.AddCommand(NewCmdGet(f, nil), NewCmdReset(f, nil))
	return cmd
}

// addSelectorFlags binds --caller, --target and --definition to sel.
func addSelectorFlags(cmd *cobra.Command, sel *client.CounterSelector) {
	fl := cmd.Flags()
	fl.StringVar(&sel.Caller, "caller", "", "a caller: user:<name>, agent:<client id>, ip:<address> or team:<name>")
	fl.StringVar(&sel.Target, "target", "", "a target: <entity_type>:<name>, e.g. mcp_server:mcpgw")
	fl.StringVar(&sel.Definition, "definition", "", "a definition id, e.g. target:mcp_server:mcpgw:60")
	for _, name := range []string{"caller", "target", "definition"} {
		_ = cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
}

// checkSelector refuses a command line that does not name exactly one
// subject, before anything is sent.
func checkSelector(cmd *cobra.Command) error {
	var given []string
	for _, name := range []string{"caller", "target", "definition"} {
		if cmd.Flags().Changed(name) {
			given = append(given, "--"+name)
		}
	}
	switch len(given) {
	case 1:
		if v, _ := cmd.Flags().GetString(strings.TrimPrefix(given[0], "--")); strings.TrimSpace(v) == "" {
			return cmdutil.FlagErrorf("%s must not be empty", given[0])
		}
		return nil
	case 0:
		return cmdutil.FlagErrorf("give one of --caller, --target or --definition")
	default:
		return cmdutil.FlagErrorf("give only one of --caller, --target or --definition (got %s)", strings.Join(given, " and "))
	}
}

// describe names the selected subject in messages: "caller user:alice".
func describe(sel client.CounterSelector) string {
	switch {
	case sel.Caller != "":
		return "caller " + sel.Caller
	case sel.Target != "":
		return "target " + sel.Target
	default:
		return "definition " + sel.Definition
	}
}

// GetOptions are the inputs of `counters get`.
type GetOptions struct {
	Factory  *cmdutil.Factory
	Selector client.CounterSelector
	Limit    int
}

// NewCmdGet builds `counters get`.
func NewCmdGet(f *cmdutil.Factory, runF func(*GetOptions) error) *cobra.Command {
	opts := &GetOptions{Factory: f}
	cmd := &cobra.Command{
		Use:     "get (--caller SUBJECT | --target TARGET | --definition ID)",
		Aliases: []string{"list", "ls"},
		Short:   "Show the live counters of a caller, target or definition",
		Example: `  rlctl counters get --caller user:alice
  rlctl counters get --target mcp_server:mcpgw -o wide
  rlctl counters get --definition target:mcp_server:mcpgw:60 -o json
  rlctl counters get --definition caller:group:developers:60 --limit 20`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkSelector(cmd); err != nil {
				return err
			}
			if opts.Limit < 1 || opts.Limit > 10000 {
				return cmdutil.FlagErrorf("--limit must be between 1 and 10000 (got %d)", opts.Limit)
			}
			if runF != nil {
				return runF(opts)
			}
			return getRun(cmd.Context(), opts)
		},
	}
	addSelectorFlags(cmd, &opts.Selector)
	cmd.Flags().IntVar(&opts.Limit, "limit", 10000, "at most this many counters (a warning says when more matched)")
	return cmd
}

func getRun(ctx context.Context, opts *GetOptions) error {
	f := opts.Factory
	c, err := f.Client()
	if err != nil {
		return err
	}
	list, err := c.ListCounters(ctx, opts.Selector, opts.Limit)
	if err != nil {
		return err
	}
	table := f.Global.Output == printer.Table || f.Global.Output == printer.Wide
	if len(list.Counters) == 0 && !list.Truncated && table {
		_, err := fmt.Fprintf(f.IOStreams.ErrOut, "No live counters for %s\n", describe(opts.Selector))
		return err
	}
	// -o json and -o yaml print the API's envelope, truncated included.
	if err := printer.List(f.IOStreams, f.Global.Output, list.Counters, Columns, list, "counter", keyOf); err != nil {
		return err
	}
	if list.Truncated && table {
		return warnTruncated(f, "the list may be incomplete")
	}
	return nil
}

// warnTruncated tells the user on stderr that the server's answer is not
// the whole answer: more counters matched than the server lists, or its
// bounded scan of a Redis store stopped before it had seen every key.
// Tables only; -o json and -o yaml carry "truncated" in the document.
func warnTruncated(f *cmdutil.Factory, consequence string) error {
	_, err := fmt.Fprintf(f.IOStreams.ErrOut, "Warning: the server stopped before it had seen every counter (more than it lists, or a bounded scan of Redis); %s\n", consequence)
	return err
}

// ResetOptions are the inputs of `counters reset`.
type ResetOptions struct {
	Factory  *cmdutil.Factory
	Selector client.CounterSelector
	Yes      bool
	DryRun   bool
}

// NewCmdReset builds `counters reset`.
func NewCmdReset(f *cmdutil.Factory, runF func(*ResetOptions) error) *cobra.Command {
	opts := &ResetOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "reset (--caller SUBJECT | --target TARGET | --definition ID)",
		Short: "Set the live counters of a caller, target or definition back to zero",
		Long: `Set the live counters of one subject back to zero: its current windows start afresh
at once, on every gateway. The change is audited (resource counters, action reset).
It asks for confirmation on a terminal; without one, pass --yes.`,
		Example: `  rlctl counters reset --caller user:alice
  rlctl counters reset --target mcp_server:mcpgw --dry-run
  rlctl counters reset --caller agent:batch-bot --yes`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkSelector(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return resetRun(cmd.Context(), opts)
		},
	}
	addSelectorFlags(cmd, &opts.Selector)
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "show how many counters would be reset, changing nothing")
	return cmd
}

func resetRun(ctx context.Context, opts *ResetOptions) error {
	f := opts.Factory
	what := describe(opts.Selector)
	if !opts.DryRun {
		if err := f.Confirm(opts.Yes, "reset the counters of "+what); err != nil {
			return err
		}
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	res, err := c.ResetCounters(ctx, opts.Selector, client.WriteOptions{DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	switch f.Global.Output {
	case printer.JSON, printer.YAML:
		doc := map[string]any{"reset": !opts.DryRun, "removed": res.Removed}
		if opts.DryRun {
			doc["dry_run"] = true
		}
		if res.Truncated {
			doc["truncated"] = true
		}
		return printer.Document(f.IOStreams, f.Global.Output, doc, nil)
	}
	verb := "reset"
	if opts.DryRun {
		verb = "would be reset"
	}
	if _, err := fmt.Fprintf(f.IOStreams.Out, "%s: %d %s %s\n", what, res.Removed, plural(res.Removed, "counter"), verb); err != nil {
		return err
	}
	if res.Truncated {
		if opts.DryRun {
			return warnTruncated(f, "more may be reset than this count")
		}
		return warnTruncated(f, "some counters may remain; run the reset again")
	}
	return nil
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
