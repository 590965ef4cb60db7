package api

import (
	"net/http"

	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/version"
	"github.com/rlctl/rlctl/pkg/wire"
)

func (s *Server) handleVersion() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := wire.VersionInfo{Version: version.String()}
		if st, err := migrate.Status(r.Context(), s.store.Pool()); err == nil {
			info.SchemaVersion, info.SchemaLatest = st.Current, st.Latest
		}
		encode(w, http.StatusOK, info)
	})
}
