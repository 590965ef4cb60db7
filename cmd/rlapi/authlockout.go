package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/clientip"
)

// authLockoutLift lifts an address's failed-credential lockout through
// the database, for an operator whose every address is locked out (the
// API refuses a locked address before it reads its token, an admin's
// too: docs/design/lockouts.md, "Lifting a lockout"). The database URL is the
// credential, as for `rlapi token create`. The same transaction as the
// API's lift: the counters deleted, the audit row, and the notice that
// makes every replica forget its cached lockout.
func authLockoutLift(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("auth-lockout lift", stderr)
	dsn := dsnFlag(fs, getenv)
	scope := fs.String("scope", "", "lift this scope's lockout only: rlapi or gateway (default: both)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: rlapi auth-lockout lift [flags] ADDRESS\n\nADDRESS is an IPv4 address, an IPv6 address (its /64) or an IPv6 network.")
		fs.PrintDefaults()
	}
	// Flags before or after ADDRESS: the flag package stops at the first
	// argument, so what follows it is parsed again.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: want an ADDRESS", errUsage)
	}
	address := fs.Arg(0)
	if err := parseFlags(fs, fs.Args()[1:]); err != nil {
		return err
	}
	scopes := []string{"rlapi", "gateway"}
	switch *scope {
	case "":
	case "rlapi", "gateway":
		scopes = []string{*scope}
	default:
		return fmt.Errorf("%w: --scope: must be rlapi or gateway (got %q)", errUsage, *scope)
	}
	key, err := lockoutKey(address)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	st, err := openStore(ctx, *dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	var lifted []string
	err = st.InTx(ctx, func(q *store.Queries) error {
		before := map[string][]store.CounterRow{}
		for _, sc := range scopes {
			rows, err := q.LiftAuthLockout(ctx, api.AuthAddressKeys(sc, key))
			if err != nil {
				return err
			}
			if len(rows) > 0 {
				before[sc] = rows
				lifted = append(lifted, sc)
			}
		}
		if len(lifted) == 0 {
			return nil
		}
		return q.InsertAudit(ctx, store.Audit{Actor: "rlapi auth-lockout lift", Action: "lift", ResourceType: "auth-lockout",
			ResourceID: key, Before: map[string]any{"counters": before}})
	})
	if err != nil {
		return err
	}
	if len(lifted) == 0 {
		return fmt.Errorf("no failed authentications are counted for %s (%s): nothing to lift", key, strings.Join(scopes, ", "))
	}
	fmt.Fprintf(stdout, "lifted the auth lockout of %s (%s) on every replica\n", key, strings.Join(lifted, ", "))
	return nil
}

// lockoutKey is the key the throttles count addr by: an IPv4 address
// itself, an IPv6 address its /64 (rlapi's own throttle keys by /64), an
// IPv6 network as given.
func lockoutKey(addr string) (string, error) {
	l, err := api.ParseLockoutAddress(addr)
	if err != nil {
		return "", err
	}
	return l.Key(func(a netip.Addr) string { return clientip.Key(a, clientip.DefaultIPv6Prefix) }), nil
}
