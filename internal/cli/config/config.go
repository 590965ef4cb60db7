// Package config reads and writes rlctl's configuration file: named
// contexts, each a server and a token file, and the one in use. It lives in
// $XDG_CONFIG_HOME/rlctl/config.yaml (~/.config/rlctl/config.yaml), or
// where RLCTL_CONFIG points.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"sigs.k8s.io/yaml"
)

// Context is one server rlctl can talk to.
type Context struct {
	Server    string `json:"server"`
	TokenFile string `json:"token-file,omitempty"`
}

// Config is the whole file.
type Config struct {
	CurrentContext string              `json:"current-context,omitempty"`
	Contexts       map[string]*Context `json:"contexts,omitempty"`

	path string
}

// Path returns the configuration file's location for the given environment.
func Path(getenv func(string) string) (string, error) {
	if p := getenv("RLCTL_CONFIG"); p != "" {
		return p, nil
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("find config directory: %w", err)
			}
			home = h
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "rlctl", "config.yaml"), nil
}

// Load reads the file at path; a missing file is an empty configuration.
func Load(path string) (*Config, error) {
	c := &Config{path: path, Contexts: map[string]*Context{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if err := yaml.UnmarshalStrict(b, c); err != nil {
		return nil, fmt.Errorf("parse config %s: %w", path, err)
	}
	if c.Contexts == nil {
		c.Contexts = map[string]*Context{}
	}
	return c, nil
}

// File is where the configuration lives.
func (c *Config) File() string { return c.path }

// Current returns the context in use, or nil.
func (c *Config) Current() *Context {
	if c.CurrentContext == "" {
		return nil
	}
	return c.Contexts[c.CurrentContext]
}

// Names lists the contexts in order.
func (c *Config) Names() []string {
	names := make([]string, 0, len(c.Contexts))
	for n := range c.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Save writes the file atomically with mode 0600 (it names token files).
func (c *Config) Save() error {
	b, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := os.Rename(tmp, c.path); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}
