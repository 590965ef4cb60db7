package api

import (
	"net/http"

	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/version"
)

type versionInfo struct {
	Version       string `json:"version"`
	SchemaVersion int32  `json:"schema_version"`
	SchemaLatest  int32  `json:"schema_latest"`
}

func (s *Server) handleVersion() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := versionInfo{Version: version.String()}
		if st, err := migrate.Status(r.Context(), s.store.Pool()); err == nil {
			info.SchemaVersion, info.SchemaLatest = st.Current, st.Latest
		}
		encode(w, http.StatusOK, info)
	})
}
