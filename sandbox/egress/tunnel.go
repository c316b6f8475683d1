package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// TunnelListener accepts connections on ln and pipes each through the
// proxy at socketPath to the one target (host:port) with CONNECT. It is
// how a client that never proxies loopback addresses reaches a model
// server on the host's loopback from a container without a network: the
// tunnel listens at the same address inside. The proxy's allowlist still
// decides. It closes ln and every tunnel when ctx ends.
func TunnelListener(ctx context.Context, ln net.Listener, socketPath, target string) error {
	dial := DialerFor(socketPath)
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup
	)
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	defer wg.Wait()
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return false
		}
		conns[c] = struct{}{}
		return true
	}
	untrack := func(c net.Conn) {
		mu.Lock()
		delete(conns, c)
		mu.Unlock()
		c.Close()
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("egress tunnel: accept: %w", err)
		}
		if !track(c) {
			c.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer untrack(c)
			up, err := dial(ctx, "tcp", target)
			if err != nil {
				// A refused tunnel is a closed connection: the client
				// reports a connection error, and the proxy recorded why.
				return
			}
			if !track(up) {
				up.Close()
				return
			}
			defer untrack(up)
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}
