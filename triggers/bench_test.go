package triggers

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// The hook path: what one `aicr notify` costs once the process is up.
// Run with: go test -bench Notify -benchmem ./triggers/

func BenchmarkNotifyDelivered(b *testing.B) {
	secret := []byte("bench-secret")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := Verify(secret, r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderSignature), body, time.Now()); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		json.NewEncoder(w).Encode(Accepted{EventID: 1})
	}))
	defer srv.Close()
	cfg := ClientConfig{URL: srv.URL, Secret: secret, SpoolDir: b.TempDir()}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := Notify(context.Background(), cfg, Event{VCS: "svn", Repo: "main", Revision: strconv.Itoa(i + 1)}, io.Discard)
		if !out.Delivered {
			b.Fatalf("not delivered: %v", out.Err)
		}
	}
}

func BenchmarkNotifySpooledDaemonDown(b *testing.B) {
	// A port nothing listens on: connection refused at once, as when the
	// daemon is stopped on the same host.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := ClientConfig{URL: "http://" + addr, Secret: []byte("s"), SpoolDir: b.TempDir()}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := Notify(context.Background(), cfg, Event{VCS: "svn", Repo: "main", Revision: strconv.Itoa(i + 1)}, io.Discard)
		if out.Spooled == "" {
			b.Fatalf("not spooled: %v", out.Err)
		}
	}
}
