package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// call is a raw HTTP request for the tests that must control the bytes on
// the wire (malformed bodies, missing tokens, odd headers).
type call struct {
	method, path, token, body string
	header                    map[string]string
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v: %s", err, a.body)
	}
	return m
}

func do(t *testing.T, base string, c call) answer {
	t.Helper()
	a, err := tryDo(base, c)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// tryDo is do for a goroutine other than the test's, which must not stop
// the test (t.Fatal): the error is its caller's to report.
func tryDo(base string, c call) (answer, error) {
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, base+c.path, body)
	if err != nil {
		return answer{}, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: %w", c.method, c.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: bytes.TrimSpace(b)}, nil
}
