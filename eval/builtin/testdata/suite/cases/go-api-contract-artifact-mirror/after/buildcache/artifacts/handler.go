package artifacts

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
)

// Handler serves GET /artifacts/{hash}.
type Handler struct {
	Store *Store
	Log   *slog.Logger
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hash := r.PathValue("hash")
	rc, err := h.Store.Open(r.Context(), hash)
	if errors.Is(err, ErrNotFound) {
		http.Error(w, "no such artifact", http.StatusNotFound)
		return
	}
	if err != nil {
		h.Log.Error("open artifact", "hash", hash, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	if _, err := io.Copy(w, rc); err != nil {
		h.Log.Warn("send artifact", "hash", hash, "err", err)
	}
}
