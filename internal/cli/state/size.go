package state

import (
	"fmt"
	"io"
	"os"

	"github.com/rlctl/rlctl/internal/applydoc"
)

// Files larger than the apply's limit (applydoc.MaxBody, what rlapi
// accepts in one apply) are refused before they are read: parsing one
// costs many times its size in memory, and the server would refuse what
// it turns into anyway.

// sizeProblem words a file (or files) over the limit.
func sizeProblem(name string, size int64) string {
	return fmt.Sprintf("%s: %s is over the %s an apply may send (rlapi refuses larger bodies): nothing was read, nothing was sent",
		name, byteSize(size), byteSize(applydoc.MaxBody))
}

// checkSizes stats files and says which is over the limit, or that
// together they are.
func checkSizes(files []string) []string {
	var probs []string
	var total int64
	for _, f := range files {
		info, err := os.Stat(f)
		if err != nil {
			continue // reading it reports it
		}
		if info.Size() > applydoc.MaxBody {
			probs = append(probs, sizeProblem(f, info.Size()))
		}
		total += info.Size()
	}
	if len(probs) == 0 && total > applydoc.MaxBody {
		probs = append(probs, sizeProblem(fmt.Sprintf("%d files", len(files)), total)+" (together)")
	}
	return probs
}

// readLimited reads r (standard input) up to the limit less used bytes;
// more is a problem, found after at most the limit is read.
func readLimited(name string, r io.Reader, used int64) ([]byte, string, error) {
	limit := applydoc.MaxBody - used
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, "", err
	}
	if int64(len(data)) > limit {
		room := "the " + byteSize(applydoc.MaxBody)
		if used > 0 {
			room = fmt.Sprintf("the %s the files leave of the %s", byteSize(limit), byteSize(applydoc.MaxBody))
		}
		return nil, fmt.Sprintf("%s: more than %s an apply may send (rlapi refuses larger bodies): nothing was sent", name, room), nil
	}
	return data, "", nil
}

// readFile reads a file up to the limit (a pipe or device, which stat
// says nothing of, included).
func readFile(name string) ([]byte, string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	return readLimited(name, f, 0)
}

// byteSize writes n in MiB (or bytes when small), with the exact count.
func byteSize(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
}
