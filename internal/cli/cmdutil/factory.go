package cmdutil

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/cli/config"
	"github.com/rlctl/rlctl/internal/cli/iostreams"
	"github.com/rlctl/rlctl/pkg/client"
)

// DefaultServer is where rlctl looks without any configuration: where
// `make run` serves.
const DefaultServer = "http://127.0.0.1:8080"

// GlobalOptions are the flags every command accepts, anywhere on the line.
type GlobalOptions struct {
	Server    string
	Token     string
	TokenFile string
	Context   string
	Output    string
	Timeout   time.Duration
	NoColor   bool
	Debug     bool
}

// Factory builds what commands need, lazily, from the global options, the
// environment and the configuration file.
type Factory struct {
	IOStreams *iostreams.IOStreams
	Getenv    func(string) string
	Now       func() time.Time
	Global    *GlobalOptions
	// ExecutableName is what the user typed ("rlctl").
	ExecutableName string
}

// NewFactory returns a Factory over the given streams and environment.
func NewFactory(io *iostreams.IOStreams, getenv func(string) string) *Factory {
	return &Factory{IOStreams: io, Getenv: getenv, Now: time.Now, Global: &GlobalOptions{}, ExecutableName: "rlctl"}
}

// Config loads the configuration file.
func (f *Factory) Config() (*config.Config, error) {
	path, err := config.Path(f.Getenv)
	if err != nil {
		return nil, err
	}
	return config.Load(path)
}

// Endpoint resolves the server and token: flags first, then the
// environment (RLCTL_SERVER, RLCTL_TOKEN, RLCTL_TOKEN_FILE), then the
// selected context, then the default server.
func (f *Factory) Endpoint() (server, token string, err error) {
	g := f.Global
	server, token, tokenFile := g.Server, g.Token, g.TokenFile
	source := "--server"
	if server == "" {
		server, source = f.Getenv("RLCTL_SERVER"), "RLCTL_SERVER"
	}
	if token == "" && tokenFile == "" {
		token = f.Getenv("RLCTL_TOKEN")
		if token == "" {
			tokenFile = f.Getenv("RLCTL_TOKEN_FILE")
		}
	}
	if server == "" || (token == "" && tokenFile == "") {
		cfg, err := f.Config()
		if err != nil {
			return "", "", err
		}
		name := g.Context
		if name == "" {
			name = f.Getenv("RLCTL_CONTEXT")
		}
		ctx := cfg.Current()
		if name == "" {
			name = cfg.CurrentContext
		} else {
			ctx = cfg.Contexts[name]
			if ctx == nil {
				return "", "", FlagErrorf("no context %q in %s (rlctl config view lists them)", name, cfg.File())
			}
		}
		if ctx != nil {
			if server == "" {
				server, source = ctx.Server, fmt.Sprintf("the server of context %q", name)
			}
			if token == "" && tokenFile == "" {
				tokenFile = ctx.TokenFile
			}
		}
	}
	if server == "" {
		server = DefaultServer
	}
	if err := CheckServer(source, server); err != nil {
		return "", "", err
	}
	if token == "" && tokenFile != "" {
		token, err = ReadTokenFile(tokenFile)
		if err != nil {
			return "", "", err
		}
	}
	return server, token, nil
}

// Client builds an SDK client for the resolved endpoint.
func (f *Factory) Client() (*client.Client, error) {
	server, token, err := f.Endpoint()
	if err != nil {
		return nil, err
	}
	opts := client.Options{Token: token, Timeout: f.Global.Timeout, UserAgent: "rlctl"}
	if f.Global.Debug {
		opts.Debug = f.IOStreams.ErrOut
	}
	c, err := client.New(server, opts)
	if err != nil {
		return nil, FlagErrorf("--server: %v", err)
	}
	return c, nil
}

// CheckServer refuses, as a usage error naming where it came from
// (source: "--server", "RLCTL_SERVER", a context), a server URL rlctl
// cannot use. A URL without a scheme gets the fix: url.Parse reads
// "127.0.0.1:8080" as a scheme and an opaque rest, and says only "first
// path segment in URL cannot contain colon".
func CheckServer(source, server string) error {
	s := strings.TrimSpace(server)
	if !strings.Contains(s, "://") {
		return FlagErrorf("%s %s: needs a scheme: http://%s (or https://)", source, server, s)
	}
	if _, err := client.New(s, client.Options{}); err != nil {
		return FlagErrorf("%s %s: %s", source, server, strings.TrimPrefix(err.Error(), fmt.Sprintf("base url %q: ", server)))
	}
	return nil
}

// ReadTokenFile reads a token from a file: a bare token, or JSON in the
// shapes the reference's token files use ({"access_token": ...},
// {"token": ...}, {"tokens": {"access_token": ...}},
// {"token_data": {"access_token": ...}}). Every failure is a usage error
// (exit 2): the command line or the configuration names a file that
// cannot serve, and nothing was sent.
func ReadTokenFile(path string) (string, error) {
	if strings.HasPrefix(path, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, path[2:])
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", FlagErrorf("read token file: %v", err)
	}
	text := strings.TrimSpace(string(b))
	if strings.HasPrefix(text, "{") {
		type accessToken struct {
			AccessToken string `json:"access_token"`
		}
		var doc struct {
			AccessToken string      `json:"access_token"`
			Token       string      `json:"token"`
			Tokens      accessToken `json:"tokens"`
			TokenData   accessToken `json:"token_data"`
		}
		if err := json.Unmarshal([]byte(text), &doc); err != nil {
			return "", FlagErrorf("token file %s: not a token nor valid JSON: %v", path, err)
		}
		for _, t := range []string{doc.AccessToken, doc.Token, doc.Tokens.AccessToken, doc.TokenData.AccessToken} {
			if t != "" {
				return t, nil
			}
		}
		return "", FlagErrorf("token file %s: JSON without access_token, token, tokens.access_token or token_data.access_token", path)
	}
	// A bare token: the first line.
	line, _, _ := strings.Cut(text, "\n")
	if line == "" {
		return "", FlagErrorf("token file %s is empty", path)
	}
	return strings.TrimSpace(line), nil
}

// Confirm asks a yes/no question on the terminal. Without a terminal it
// refuses unless yes is set: destructive commands in scripts must say --yes.
func (f *Factory) Confirm(yes bool, question string) error {
	if yes {
		return nil
	}
	io := f.IOStreams
	if !io.CanPrompt() {
		return FlagErrorf("refusing to %s without confirmation: stdin is not a terminal; pass --yes", question)
	}
	fmt.Fprintf(io.ErrOut, "%s? [y/N] ", capitalize(question))
	answer, _ := bufio.NewReader(io.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return ErrCanceled
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
