package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestAPIErrorDecodesProblemDetails(t *testing.T) {
	t.Parallel()
	const detail = "user_max_requests 3 is below the user floor of 20/min; mode must be enforce or shadow"
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-ID", "req-42")
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"type":"https://rlctl.dev/problems/validation","title":"Invalid definition",
			"status":400,"detail":"` + detail + `",
			"errors":[{"field":"user_max_requests","message":"user_max_requests 3 is below the user floor of 20/min"},
			          {"field":"mode","message":"mode must be enforce or shadow"}]}`))
	}), Options{})

	_, err := c.PutDefinition(context.Background(), validDefinition(), WriteOptions{})

	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %T %v, want *APIError", err, err)
	}
	if err.Error() != detail {
		t.Errorf("Error() = %q, want the server's detail %q", err.Error(), detail)
	}
	if apiErr.StatusCode != 400 || apiErr.Title != "Invalid definition" ||
		apiErr.Type != "https://rlctl.dev/problems/validation" || apiErr.RequestID != "req-42" {
		t.Errorf("APIError = %+v", apiErr)
	}
	want := []FieldError{
		{Field: "user_max_requests", Message: "user_max_requests 3 is below the user floor of 20/min"},
		{Field: "mode", Message: "mode must be enforce or shadow"},
	}
	if len(apiErr.Errors) != len(want) {
		t.Fatalf("Errors = %+v, want %+v", apiErr.Errors, want)
	}
	for i := range want {
		if apiErr.Errors[i] != want[i] {
			t.Errorf("Errors[%d] = %+v, want %+v", i, apiErr.Errors[i], want[i])
		}
	}
	if !errors.Is(err, ErrBadRequest) {
		t.Errorf("errors.Is(err, ErrBadRequest) = false")
	}
}

func TestAPIErrorSentinelPerStatus(t *testing.T) {
	t.Parallel()
	all := []error{ErrBadRequest, ErrUnauthorized, ErrForbidden, ErrNotFound, ErrConflict,
		ErrPreconditionFailed, ErrTooManyRequests, ErrUnavailable}
	tests := []struct {
		status int
		want   error
	}{
		{400, ErrBadRequest},
		{413, ErrBadRequest},
		{422, ErrBadRequest},
		{401, ErrUnauthorized},
		{403, ErrForbidden},
		{404, ErrNotFound},
		{409, ErrConflict},
		{412, ErrPreconditionFailed},
		{429, ErrTooManyRequests},
		{502, ErrUnavailable},
		{503, ErrUnavailable},
		{504, ErrUnavailable},
		{500, nil},
		{418, nil},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			t.Parallel()
			c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writeProblem(w, tt.status, "the server says no")
			}), Options{Retries: -1})

			_, err := c.GetDefinition(context.Background(), "caller:group:devs:60")

			if err == nil || err.Error() != "the server says no" {
				t.Fatalf("err = %v, want the server's detail", err)
			}
			for _, sentinel := range all {
				if got := errors.Is(err, sentinel); got != (sentinel == tt.want) {
					t.Errorf("errors.Is(err, %v) = %v", sentinel, got)
				}
			}
		})
	}
}

func TestAPIErrorNonProblemBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		contentType string
		body        string
		want        string
	}{
		{
			name:        "html from a proxy",
			contentType: "text/html",
			body:        "<html>\n<body>Bad   gateway</body>\n</html>",
			want:        "502 Bad Gateway: <html> <body>Bad gateway</body> </html>",
		},
		{
			name:        "empty body",
			contentType: "text/plain",
			want:        "502 Bad Gateway",
		},
		{
			name:        "long body is cut",
			contentType: "text/plain",
			body:        strings.Repeat("é", 300),
			want:        "502 Bad Gateway: " + strings.Repeat("é", 100) + "...",
		},
		{
			name:        "fastapi style detail under application/json",
			contentType: "application/json",
			body:        `{"detail":"Rate limit not found"}`,
			want:        "Rate limit not found",
		},
		{
			name:        "json without problem fields",
			contentType: "application/json",
			body:        `{"message":"nope"}`,
			want:        `502 Bad Gateway: {"message":"nope"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(http.StatusBadGateway)
				_, _ = w.Write([]byte(tt.body))
			}), Options{Retries: -1})

			_, err := c.ListAdmins(context.Background())

			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("errors.Is(err, ErrUnavailable) = false")
			}
		})
	}
}

func TestAPIErrorRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"300", 300 * time.Second},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"soon", 0},
		{"-1", 0},
		{"", 0},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			t.Parallel()
			c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.header != "" {
					w.Header().Set("Retry-After", tt.header)
				}
				writeProblem(w, http.StatusTooManyRequests, "too many failed logins")
			}), Options{now: func() time.Time { return now }})

			_, err := c.ListTokens(context.Background())

			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want *APIError", err)
			}
			if apiErr.RetryAfter != tt.want {
				t.Errorf("RetryAfter = %v, want %v", apiErr.RetryAfter, tt.want)
			}
			if !errors.Is(err, ErrTooManyRequests) {
				t.Errorf("errors.Is(err, ErrTooManyRequests) = false")
			}
		})
	}
}

func TestTransportErrorsAreWrappedWithContext(t *testing.T) {
	t.Parallel()
	c, _, srv := newTestClient(t, http.NotFoundHandler(), Options{Retries: -1})
	srv.Close()

	_, err := c.GetDefinition(context.Background(), "caller:group:devs:60")

	if err == nil || !strings.HasPrefix(err.Error(), `get definition "caller:group:devs:60": `) {
		t.Fatalf("err = %v, want it to start with the operation", err)
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		t.Errorf("a connection error became an APIError: %v", apiErr)
	}
}
