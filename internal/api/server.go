// Package api is rlapi's HTTP server: the management API over the store.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/validate"
)

// Config is what an operator tunes; zero values take the defaults.
type Config struct {
	Floors validate.Floors
	// ShutdownTimeout bounds the wait for in-flight requests on SIGTERM.
	ShutdownTimeout time.Duration
}

// Server serves the API.
type Server struct {
	store *store.Store
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
}

// Opts are optional dependencies of New.
type Opts struct {
	Logger *slog.Logger
	Now    func() time.Time
}

// New returns a server over st.
func New(st *store.Store, cfg Config, opts Opts) *Server {
	if cfg.Floors == (validate.Floors{}) {
		cfg.Floors = validate.DefaultFloors()
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 20 * time.Second
	}
	s := &Server{store: st, cfg: cfg, log: opts.Logger, now: opts.Now}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Serve answers on ln until ctx ends, then lets in-flight requests finish
// (up to Config.ShutdownTimeout) before returning.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return err
}
