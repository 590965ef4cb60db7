package api

import (
	"net/http"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/rlctl/rlctl/docs"
)

// openAPIJSON converts the embedded OpenAPI document to JSON once, on first
// use.
var openAPIJSON = sync.OnceValues(func() ([]byte, error) {
	return yaml.YAMLToJSON(docs.OpenAPIYAML)
})

// handleOpenAPI serves this API's OpenAPI document as JSON.
func (s *Server) handleOpenAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, err := openAPIJSON()
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
}
