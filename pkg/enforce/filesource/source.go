package filesource

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/enforce"
)

// Options tune a Source; zero values take the defaults.
type Options struct {
	// Interval is how often the file is polled (default 1 s): its size
	// and modification time each time, its content (by hash) when they
	// changed and on every tenth poll, for edits that keep both. A change
	// is read once its size and modification time held from one poll to
	// the next, so a file written in place is not read half-written (a
	// file changing at every poll is read on its tenth).
	Interval time.Duration
	// Floors are the minimum caller limits (default: rlapi's, 20 a minute
	// for users and 10 for agents). NoFloors turns them off.
	Floors   Floors
	NoFloors bool
	// MaxShrink is the largest fraction of its definitions and
	// memberships (the sentinels aside) a reload may drop: a change to a
	// file with fewer than (1 - MaxShrink) as many is refused, as a file
	// cut short. 0 is the default, DefaultMaxShrink (0.5); 1 lets any
	// count through.
	MaxShrink float64
	// AllowShrink turns off the two guards on reloads: MaxShrink, and the
	// refusal of a change that leaves a quarantine group that had members
	// empty. To let one change through, end the file with
	// AllowShrinkMarker instead. The first load is never guarded.
	AllowShrink bool
	// Logger receives one line per file change that is refused, and one
	// per change loaded (nil: no logs).
	Logger *slog.Logger
	// Registerer receives the Source's metric,
	// rlctl_filesource_refused_total{reason} (nil: not registered).
	Registerer prometheus.Registerer
}

// Source is an enforce.Source over one state file. It is safe for
// concurrent use.
type Source struct {
	path   string
	opts   Options
	floors Floors
	log    *slog.Logger
	// refusedTotal counts the changes refused, by reason.
	refusedTotal *prometheus.CounterVec

	mu    sync.Mutex
	state enforce.State
	// version counts the states loaded; a watcher notifies when it moves.
	version uint64
	lastErr error
	// flight is closed when the poll under way ends (nil: none is).
	flight chan struct{}

	// refusedKey names the change last refused (its content's hash, or
	// the read error), so that each is logged and counted once.
	refusedKey string

	// What was last read: its stat and hash, to skip unchanged content,
	// and the stat seen since, to read a change once it has settled.
	// Only the poll under way touches them (one at a time), so a read
	// that is slow holds no lock that Load, LoadTables or Watch wait on.
	read, seen fileStat
	unsettled  int
	sum        [sha256.Size]byte
	polls      int
}

// fileStat is what a poll compares: a file's size and modification time.
type fileStat struct{ size, modTime int64 }

// New reads path and returns a Source serving it. A file that cannot be
// read or parsed is an error here (the guards against a file cut short
// do not apply: there is no state before it); later, a change that
// cannot be read or parsed, or that a guard refuses, keeps the last good
// state (see Err).
func New(path string, opts Options) (*Source, error) {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.MaxShrink < 0 || opts.MaxShrink > 1 {
		return nil, fmt.Errorf("filesource: Options.MaxShrink %g: must be between 0 and 1 (0: the default, %g)", opts.MaxShrink, DefaultMaxShrink)
	}
	if opts.MaxShrink == 0 {
		opts.MaxShrink = DefaultMaxShrink
	}
	s := &Source{path: path, opts: opts, log: opts.Logger, floors: opts.Floors,
		refusedTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_filesource_refused_total",
			Help: "State file changes refused, the last good state kept, by reason: unreadable, invalid, shrink or quarantine."}, []string{"reason"})}
	for _, r := range []string{reasonUnreadable, reasonInvalid, reasonShrink, reasonQuarantine} {
		s.refusedTotal.WithLabelValues(r)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.NoFloors {
		s.floors = Floors{}
	} else if s.floors == (Floors{}) {
		d := validate.DefaultFloors()
		s.floors = Floors{User: d.User, Agent: d.Agent}
	}
	if _, err := s.poll(true); err != nil {
		return nil, err
	}
	// Registered once the file loaded, so a New that failed can be
	// retried with the same Registerer.
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(s.refusedTotal); err != nil {
			return nil, fmt.Errorf("filesource: register metrics: %w", err)
		}
	}
	return s, nil
}

// poll reads the file when it may have changed and, when it has and it
// parses, replaces the state. It reports whether the state changed; err
// is the problem with the file, the state kept. One poll runs at a time
// (New's, then those pollWait starts).
func (s *Source) poll(first bool) (bool, error) {
	s.polls++
	f, info, err := openState(s.path)
	if err != nil {
		// Whatever comes back is a change, read afresh.
		s.read, s.sum = fileStat{}, [sha256.Size]byte{}
		return false, s.refused(first, reasonUnreadable, "err:"+err.Error(), err)
	}
	defer f.Close()
	now := fileStat{info.Size(), info.ModTime().UnixNano()}
	if !first {
		switch {
		case now == s.read && s.polls%10 != 0:
			return false, s.Err()
		case now != s.read && now != s.seen && s.unsettled < 10:
			// Changed since the last poll: maybe still being written
			// (truncated, then filled). Read it when it holds still.
			s.seen = now
			s.unsettled++
			return false, s.Err()
		}
	}
	s.seen, s.unsettled = now, 0
	data, err := readState(s.path, f)
	if err != nil {
		s.read, s.sum = fileStat{}, [sha256.Size]byte{}
		return false, s.refused(first, reasonUnreadable, "err:"+err.Error(), err)
	}
	s.read = now
	sum := sha256.Sum256(data)
	if !first && sum == s.sum {
		return false, s.Err() // unchanged, or the same refused content
	}
	s.sum = sum
	key := fmt.Sprintf("sum:%x", sum)
	st, err := Parse(s.path, data, s.floors)
	if err != nil {
		return false, s.refused(first, reasonInvalid, key, err)
	}
	if !first && !s.opts.AllowShrink {
		s.mu.Lock()
		prev := s.state
		s.mu.Unlock()
		if reason, err := guard(s.path, prev, st, data, s.opts.MaxShrink); err != nil {
			return false, s.refused(first, reason, key, err)
		}
	}
	s.mu.Lock()
	s.state, s.lastErr, s.refusedKey = st, nil, ""
	s.version++
	s.mu.Unlock()
	if !first {
		s.log.Info("filesource: state file reloaded", "file", s.path,
			"definitions", len(st.Definitions), "memberships", len(st.Memberships), "admins", len(st.Admins))
	}
	return true, nil
}

// pollWait polls the file unless a poll is under way, and waits for the
// poll to end or for ctx to. A read that never returns (a file on a
// mount that hangs) then holds up no caller past its context, and no
// shutdown: the poll goroutine ends with the read.
func (s *Source) pollWait(ctx context.Context) {
	s.mu.Lock()
	done := s.flight
	if done == nil {
		done = make(chan struct{})
		s.flight = done
		go func() {
			s.poll(false) //nolint:errcheck // refused content is logged and kept in Err
			s.mu.Lock()
			s.flight = nil
			s.mu.Unlock()
			close(done)
		}()
	}
	s.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// refused records a change that could not be loaded, logging and
// counting it once (key names the change: the content's hash, or the read
// error): at ERROR when it cannot be read or parsed, at WARN when it
// parses and a guard refused it.
func (s *Source) refused(first bool, reason, key string, err error) error {
	if first {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if key != s.refusedKey {
		level := slog.LevelError
		if reason == reasonShrink || reason == reasonQuarantine {
			level = slog.LevelWarn
		}
		// Counted first: whoever reads the line finds it counted.
		s.refusedTotal.WithLabelValues(reason).Inc()
		s.log.Log(context.Background(), level, "filesource: state file refused; keeping the last good state",
			"file", s.path, "reason", reason, "err", err)
	}
	s.lastErr, s.refusedKey = err, key
	return err
}

// Err is the problem with the file's current content (nil when the state
// served is the file's): a change that cannot be read or parsed, or that
// looks like a file cut short.
func (s *Source) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Load returns the last good state, after looking at the file once more
// (a change is read at the look after the one that saw it, once the file
// held still). A file whose current content is refused is not an error
// here: the last good state is served (Err says why it is not the
// file's). Load waits for a poll under way only until ctx ends.
func (s *Source) Load(ctx context.Context) (enforce.State, error) {
	if err := ctx.Err(); err != nil {
		return enforce.State{}, err
	}
	s.pollWait(ctx)
	if err := ctx.Err(); err != nil {
		return enforce.State{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneState(s.state), nil
}

// LoadTables returns what req names of the last good state (the file is
// held in memory whole, so a table is read whole as cheaply as a row).
func (s *Source) LoadTables(ctx context.Context, req enforce.TablesRequest) (enforce.Rows, error) {
	if err := ctx.Err(); err != nil {
		return enforce.Rows{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return enforce.SelectRows(s.state, req), nil
}

// Capabilities: a file source cannot write escalation lockouts (the file
// is the operator's, and other replicas would not see a write), so New
// refuses escalation over it; the quarantine gauge is counted from the
// Enforcer's snapshot, which holds the file's state.
func (s *Source) Capabilities() enforce.SourceCapabilities { return enforce.SourceCapabilities{} }

// LockOut cannot write to the file: it returns an error wrapping
// enforce.ErrNotImplemented.
func (s *Source) LockOut(context.Context, enforce.Lockout) (bool, error) {
	return false, fmt.Errorf("filesource: write a lockout to %s: %w", s.path, enforce.ErrNotImplemented)
}

// CountQuarantined is not counted here (the Enforcer counts its
// snapshot): it returns an error wrapping enforce.ErrNotImplemented.
func (s *Source) CountQuarantined(context.Context, time.Time) (int64, int64, error) {
	return 0, 0, fmt.Errorf("filesource: count quarantines: %w", enforce.ErrNotImplemented)
}

// Watch polls the file every Interval until ctx ends, delivering
// Change{All: true} each time a changed file loads. ready is called at
// once: the state served from then on is what Load returns or newer.
func (s *Source) Watch(ctx context.Context, ready func(), notify func(enforce.Change)) error {
	s.mu.Lock()
	seen := s.version
	s.mu.Unlock()
	ready()
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		s.pollWait(ctx)
		s.mu.Lock()
		v := s.version
		s.mu.Unlock()
		if v != seen {
			seen = v
			notify(enforce.Change{All: true})
		}
	}
}

// Path is the file the Source reads.
func (s *Source) Path() string { return s.path }

func cloneState(st enforce.State) enforce.State {
	st.Definitions = slices.Clone(st.Definitions)
	st.Memberships = slices.Clone(st.Memberships)
	st.Admins = slices.Clone(st.Admins)
	return st
}

var _ enforce.Source = (*Source)(nil)

// String names the Source in logs.
func (s *Source) String() string { return fmt.Sprintf("filesource(%s)", s.path) }
