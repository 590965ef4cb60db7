package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// probeCmd asks an rlapi on this host whether it is ready (GET /readyz) or
// alive (/healthz) and returns nil only on 200: the health check of the
// container image, which has no shell and no curl to make that request.
// It reads RLAPI_ADDR as serve does, so the same environment configures
// both; a wildcard host (0.0.0.0, [::], none) is probed on loopback.
func probeCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("probe", stderr)
	addr := fs.String("addr", envDefault(getenv, "RLAPI_ADDR", "127.0.0.1:8080"), "the address rlapi serves on (RLAPI_ADDR)")
	path := fs.String("path", "/readyz", "what to ask: /readyz (ready to serve: database reachable, schema current) or /healthz (the process answers)")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: rlapi probe takes no arguments (got %q)", errUsage, fs.Args())
	}
	if *path != "/readyz" && *path != "/healthz" {
		return fmt.Errorf("%w: --path: must be /readyz or /healthz (got %q)", errUsage, *path)
	}
	if *timeout <= 0 {
		return fmt.Errorf("%w: --timeout: must be positive (got %v)", errUsage, *timeout)
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("%w: --addr (RLAPI_ADDR): want host:port (got %q)", errUsage, *addr)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	url := "http://" + net.JoinHostPort(host, port) + *path
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	answer := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: %s: %s", url, resp.Status, answer)
	}
	fmt.Fprintf(stdout, "%s: %s\n", url, answer)
	return nil
}
