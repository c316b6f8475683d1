package egress

import (
	"context"
	"net"
)

// TunnelListener accepts connections on ln and pipes each through the
// proxy at socketPath to the one target (host:port) with CONNECT. It is
// how a client that never proxies loopback addresses reaches a model
// server on the host's loopback from a container without a network: the
// tunnel listens at the same address inside. The proxy's allowlist still
// decides; a refused tunnel is a closed connection (the client reports a
// connection error, the proxy recorded why). It closes ln and every
// tunnel when ctx ends.
func TunnelListener(ctx context.Context, ln net.Listener, socketPath, target string) error {
	dial := DialerFor(socketPath)
	return splice(ctx, ln, "egress tunnel",
		func(ctx context.Context) (net.Conn, error) { return dial(ctx, "tcp", target) }, nil)
}
