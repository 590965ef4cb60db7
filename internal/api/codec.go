package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/rlctl/rlctl/internal/applydoc"
	"github.com/rlctl/rlctl/internal/validate"
)

// maxBody caps request bodies; larger ones get 413.
const maxBody = 1 << 20

// decode reads a JSON body into T: at most maxBody bytes, unknown fields
// refused, exactly one value. Every failure names the field it can: a typo
// such as user_max_request must never silently create an unlimited group.
// An empty body decodes to the zero T when optional is true.
func decode[T any](w http.ResponseWriter, r *http.Request, optional bool) (T, error) {
	body, err := readBody(w, r)
	if err != nil {
		var v T
		return v, err
	}
	return decodeBody[T](body, optional)
}

// readBody reads a request body of at most maxBody bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errorf(http.StatusRequestEntityTooLarge, "too-large", "Request body too large",
				fmt.Sprintf("request body exceeds %d bytes", maxBody))
		}
		return nil, badRequest("read request body: " + err.Error())
	}
	return body, nil
}

// decodeBody is decode of a body already read.
func decodeBody[T any](body []byte, optional bool) (T, error) {
	var v T
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return v, nil
		}
		return v, badRequest("request body is empty; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, decodeError(err)
	}
	if dec.More() {
		return v, badRequest("request body holds more than one JSON value")
	}
	return v, nil
}

// decodeError turns encoding/json's errors into field errors.
func decodeError(err error) error {
	var (
		syntax    *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		fieldName string
	)
	switch {
	case errors.As(err, &syntax):
		return badRequest(fmt.Sprintf("malformed JSON at byte %d: %v", syntax.Offset, syntax))
	case errors.As(err, &typeErr):
		fieldName = typeErr.Field
		if fieldName == "" {
			return badRequest(fmt.Sprintf("request body must be a JSON object, not %s", typeErr.Value))
		}
		msg := applydoc.TypeMessage(fieldName, applydoc.JSONKind(typeErr.Type.Kind().String()), typeErr.Value)
		return badRequest(msg, validate.FieldError{Field: fieldName, Message: msg})
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("malformed JSON: unexpected end of input")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		fieldName = strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		msg := fmt.Sprintf("%s: unknown field", fieldName)
		return badRequest(msg, validate.FieldError{Field: fieldName, Message: msg})
	default:
		return badRequest("malformed JSON: " + strings.TrimPrefix(err.Error(), "json: "))
	}
}

// encode writes v as JSON with status.
func encode[T any](w http.ResponseWriter, status int, v T) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
