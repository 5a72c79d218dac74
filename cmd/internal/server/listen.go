package server

import (
	"fmt"
	"net"
	"strconv"
)

// splitHostPort reads a --listen value: HOST:PORT, with port 0 meaning
// "any free port" (the embedded server's random port).
func splitHostPort(listen string) (string, int, error) {
	host, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("listen address %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("listen address %q: port must be 0..65535", listen)
	}
	if port == 0 {
		port = -1
	}
	return host, port, nil
}

// loopback reports whether host, a listen address's host, takes
// connections from this machine only.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
