package main

import (
	"flag"
	"log"
	"net/http"
	"os"
	"time"

	"example.com/studio/crashd/ingest"
)

func main() {
	addr := flag.String("addr", ":9100", "listen address")
	dir := flag.String("dir", "/srv/crashd/dumps", "where minidumps are stored")
	maxMB := flag.Int("max-mb", 64, "largest accepted minidump in MiB")
	flag.Parse()

	if err := os.MkdirAll(*dir, 0o750); err != nil {
		log.Fatalf("crashd: create %s: %v", *dir, err)
	}
	h := &ingest.Handler{Dir: *dir, MaxBytes: int64(*maxMB) << 20}

	srv := &http.Server{
		Addr:              *addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Printf("crashd: listening on %s, storing in %s", *addr, *dir)
	if err := srv.ListenAndServe(); err != nil {
		log.Fatalf("crashd: %v", err)
	}
}
