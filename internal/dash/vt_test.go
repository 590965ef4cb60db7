package dash_test

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// screen is just enough of a terminal to read what Bubble Tea draws: it
// keeps a grid of cells and applies the cursor movements and erasures the
// renderer sends, ignoring colours, modes and queries. Its text is what a
// person would see, without any escape sequence.
type screen struct {
	mu         sync.Mutex
	rows, cols int
	cells      [][]rune
	r, c       int
	buf        []byte // an incomplete sequence or rune, until the rest arrives
}

func newScreen(rows, cols int) *screen {
	s := &screen{rows: rows, cols: cols}
	s.clear()
	return s
}

func (s *screen) clear() {
	s.cells = make([][]rune, s.rows)
	for i := range s.cells {
		s.cells[i] = blank(s.cols)
	}
}

func blank(n int) []rune {
	row := make([]rune, n)
	for i := range row {
		row[i] = ' '
	}
	return row
}

// Text is the screen, one line per row, trailing blanks trimmed.
func (s *screen) Text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines := make([]string, s.rows)
	for i, row := range s.cells {
		lines[i] = strings.TrimRight(string(row), " ")
	}
	return strings.Join(lines, "\n")
}

// Write feeds the terminal output.
func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	i := 0
	for i < len(s.buf) {
		n := s.step(s.buf[i:])
		if n == 0 {
			break // incomplete: wait for more
		}
		i += n
	}
	s.buf = append(s.buf[:0], s.buf[i:]...)
	return len(p), nil
}

// step applies the sequence or character at the start of b and returns how
// many bytes it took, 0 when b ends too early.
func (s *screen) step(b []byte) int {
	switch b[0] {
	case 0x1b:
		return s.escape(b)
	case '\r':
		s.c = 0
	case '\n':
		s.lineFeed()
	case '\b':
		s.c = max(s.c-1, 0)
	case '\t':
		s.c = min((s.c/8+1)*8, s.cols-1)
	default:
		if b[0] < 0x20 || b[0] == 0x7f {
			return 1
		}
		if !utf8.FullRune(b) {
			return 0
		}
		r, n := utf8.DecodeRune(b)
		s.put(r)
		return n
	}
	return 1
}

func (s *screen) lineFeed() {
	if s.r < s.rows-1 {
		s.r++
		return
	}
	s.cells = append(s.cells[1:], blank(s.cols))
}

func (s *screen) put(r rune) {
	if s.c >= s.cols { // the deferred wrap of a full line
		s.c = 0
		s.lineFeed()
	}
	s.cells[s.r][s.c] = r
	s.c++
}

func (s *screen) escape(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '[':
		for i := 2; i < len(b); i++ {
			if b[i] >= 0x40 && b[i] <= 0x7e {
				s.csi(string(b[2:i]), b[i])
				return i + 1
			}
		}
		return 0
	case ']', 'P', '_', '^': // OSC, DCS, APC, PM: up to BEL or ST
		for i := 2; i < len(b); i++ {
			if b[i] == 0x07 {
				return i + 1
			}
			if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\' {
				return i + 2
			}
		}
		return 0
	case '(', ')':
		if len(b) < 3 {
			return 0
		}
		return 3
	case 'M': // reverse index
		s.r = max(s.r-1, 0)
	}
	return 2
}

// csi applies a control sequence: params, then the final byte.
func (s *screen) csi(params string, final byte) {
	private := strings.HasPrefix(params, "?")
	params = strings.TrimLeft(params, "?>=<")
	var ns []int
	for _, p := range strings.Split(params, ";") {
		n, _ := strconv.Atoi(p)
		ns = append(ns, n)
	}
	arg := func(i, def int) int {
		if i < len(ns) && ns[i] > 0 {
			return ns[i]
		}
		return def
	}
	switch final {
	case 'A':
		s.r = max(s.r-arg(0, 1), 0)
	case 'B':
		s.r = min(s.r+arg(0, 1), s.rows-1)
	case 'C':
		s.c = min(s.c+arg(0, 1), s.cols-1)
	case 'D':
		s.c = max(s.c-arg(0, 1), 0)
	case 'G':
		s.c = min(arg(0, 1)-1, s.cols-1)
	case 'd':
		s.r = min(arg(0, 1)-1, s.rows-1)
	case 'H', 'f':
		s.r, s.c = min(arg(0, 1)-1, s.rows-1), min(arg(1, 1)-1, s.cols-1)
	case 'J':
		mode := 0
		if len(ns) > 0 {
			mode = ns[0]
		}
		switch mode {
		case 0:
			s.eraseLine(s.r, s.c, s.cols)
			for r := s.r + 1; r < s.rows; r++ {
				s.cells[r] = blank(s.cols)
			}
		case 1:
			for r := 0; r < s.r; r++ {
				s.cells[r] = blank(s.cols)
			}
			s.eraseLine(s.r, 0, s.c+1)
		default:
			s.clear()
		}
	case 'K':
		mode := 0
		if len(ns) > 0 {
			mode = ns[0]
		}
		switch mode {
		case 0:
			s.eraseLine(s.r, s.c, s.cols)
		case 1:
			s.eraseLine(s.r, 0, s.c+1)
		default:
			s.eraseLine(s.r, 0, s.cols)
		}
	case 'h', 'l':
		if private && len(ns) > 0 && (ns[0] == 1049 || ns[0] == 47 || ns[0] == 1047) {
			s.clear() // entering or leaving the alternate screen
			s.r, s.c = 0, 0
		}
	}
}

func (s *screen) eraseLine(r, from, to int) {
	for c := max(from, 0); c < min(to, s.cols); c++ {
		s.cells[r][c] = ' '
	}
}
