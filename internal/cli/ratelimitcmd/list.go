package ratelimitcmd

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// ListOptions are the inputs of `rate-limit list`.
type ListOptions struct {
	Factory *cmdutil.Factory
	Filter  client.DefinitionFilter
}

// NewCmdList builds `rate-limit list`.
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{Factory: f}
	var enabled string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List rate-limit definitions",
		Example: `  rlctl rate-limit list
  rlctl rate-limit list --axis target -o wide
  rlctl rate-limit list --group developers -o json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if enabled != "" {
				b, err := strconv.ParseBool(enabled)
				if err != nil {
					return cmdutil.FlagErrorf("--enabled: must be true or false (got %q)", enabled)
				}
				opts.Filter.Enabled = &b
			}
			if runF != nil {
				return runF(opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Filter.Axis, "axis", "", "only this axis")
	fl.StringVar(&opts.Filter.EntityType, "entity-type", "", "only this entity type")
	fl.StringVar(&opts.Filter.Name, "name", "", "only this name")
	fl.StringVar(&opts.Filter.Group, "group", "", "only group definitions of this name, and server groups listing this member")
	fl.StringVar(&enabled, "enabled", "", "only enabled (true) or disabled (false) definitions")
	cmdutil.EnumFlag(cmd, "axis", validate.Axes()...)
	cmdutil.EnumFlag(cmd, "entity-type", validate.EntityTypes()...)
	return cmd
}

type definitionList struct {
	Definitions []ratelimit.Definition `json:"definitions"`
}

func listRun(ctx context.Context, opts *ListOptions) error {
	return cmdutil.RunList(ctx, opts.Factory, func(ctx context.Context, c *client.Client) ([]ratelimit.Definition, error) {
		return c.ListAllDefinitions(ctx, opts.Filter)
	}, Columns, func(defs []ratelimit.Definition) any { return definitionList{defs} }, "definition", idOf)
}
