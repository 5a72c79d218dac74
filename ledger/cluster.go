package ledger

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Defaults and limits of ClusterConfig.
const (
	// DefaultClusterName names the JetStream cluster the members form.
	DefaultClusterName = "quota"
	// DefaultLameDuckDuration is how long a member's LameDuckShutdown
	// spreads the closing of its clients' connections over, once its
	// leaderships are handed over.
	DefaultLameDuckDuration = 10 * time.Second
	// DefaultLameDuckGracePeriod is how long a member in lame-duck mode
	// waits, once it has told its clients, before it closes the first
	// connection: time for a client to move to another member by itself.
	DefaultLameDuckGracePeriod = 2 * time.Second
	// QuorumContactWindow is how recently a member's replica of a stream
	// must have heard from its leader (or, leading, from enough followers
	// for a quorum) for Quorum to count it in contact. It is shorter than
	// nats-server's smallest election timeout (4 s): a member cut off
	// from the others knows it before they can elect a leader without it
	// and append anything it would not see.
	QuorumContactWindow = 3 * time.Second
	// ClusterMembersMax bounds the routes of a cluster; JetStream keeps
	// at most ReplicasMax copies, so more members would hold nothing.
	ClusterMembersMax = 16
)

// ClusterConfig makes the embedded server a member of a JetStream cluster:
// servers that route messages to each other and keep replicated streams
// (Raft groups), each write acknowledged once a quorum of the stream's
// replicas stored it. Its zero value is a server of its own.
type ClusterConfig struct {
	// Name is the cluster's name, the same on every member. Zero:
	// DefaultClusterName.
	Name string
	// Host is the interface the member listens on for its peers' routes.
	// Zero: EmbeddedConfig.Host.
	Host string
	// Port is the route port. Required with Routes.
	Port int
	// Advertise is the HOST:PORT the member tells the others to route to
	// it at, when it is not Host:Port (behind a NAT, a proxy or a relay).
	// Zero: Host:Port.
	Advertise string
	// Routes are the route URLs (nats://HOST:PORT) of every member, this
	// one included, as the NATS Helm chart lists them: every member
	// dials the others and the server recognises and drops its own. Zero:
	// no cluster.
	Routes []string
	// LameDuckDuration is how long LameDuckShutdown spreads closing
	// client connections over. Zero: DefaultLameDuckDuration.
	LameDuckDuration time.Duration
	// LameDuckGracePeriod is how long LameDuckShutdown waits, after
	// telling clients, before it closes the first connection; it must be
	// shorter than LameDuckDuration. Zero: DefaultLameDuckGracePeriod.
	LameDuckGracePeriod time.Duration
}

// Enabled reports whether c makes a cluster member.
func (c ClusterConfig) Enabled() bool { return len(c.Routes) > 0 }

func (c ClusterConfig) withDefaults(host string) ClusterConfig {
	if !c.Enabled() {
		return c
	}
	c.Name = cmp.Or(c.Name, DefaultClusterName)
	c.Host = cmp.Or(c.Host, host)
	c.LameDuckDuration = cmp.Or(c.LameDuckDuration, DefaultLameDuckDuration)
	c.LameDuckGracePeriod = cmp.Or(c.LameDuckGracePeriod, DefaultLameDuckGracePeriod)
	return c
}

// problems lists what is wrong with c, defaults applied, for a server
// named serverName.
func (c ClusterConfig) problems(serverName string) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if !c.Enabled() {
		if c.Port != 0 || c.Name != "" {
			add("Cluster.Port or Cluster.Name is set without Cluster.Routes: a cluster member needs the routes of every member")
		}
		return problems
	}
	if serverName == "" {
		add("ServerName is required of a cluster member: JetStream tells the members apart by name")
	}
	if strings.ContainsAny(c.Name, " \t\r\n.*>") {
		add("Cluster.Name %q holds a space, '.', '*' or '>'", c.Name)
	}
	if c.Port < 1 || c.Port > 65535 {
		add("Cluster.Port %d is outside 1..65535: the other members dial it", c.Port)
	}
	if c.Advertise != "" {
		if _, port, err := net.SplitHostPort(c.Advertise); err != nil || port == "" {
			add("Cluster.Advertise %q: want HOST:PORT", c.Advertise)
		}
	}
	if len(c.Routes) > ClusterMembersMax {
		add("Cluster.Routes lists %d members, at most %d", len(c.Routes), ClusterMembersMax)
	}
	seen := map[string]bool{}
	for _, r := range c.Routes {
		if err := CheckRoute(r); err != nil {
			add("Cluster.Routes: %v", err)
		} else if seen[r] {
			add("Cluster.Routes lists %s twice", r)
		}
		seen[r] = true
	}
	if c.LameDuckDuration < 0 || c.LameDuckGracePeriod < 0 {
		add("Cluster.LameDuckDuration %s or LameDuckGracePeriod %s is negative", c.LameDuckDuration, c.LameDuckGracePeriod)
	} else if c.LameDuckGracePeriod >= c.LameDuckDuration {
		add("Cluster.LameDuckGracePeriod %s is not shorter than LameDuckDuration %s", c.LameDuckGracePeriod, c.LameDuckDuration)
	}
	return problems
}

// CheckRoute checks that r is a route URL: nats://HOST:PORT.
func CheckRoute(r string) error {
	u, err := url.Parse(r)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", r, err)
	}
	if u.Scheme != "nats" && u.Scheme != "nats-route" {
		return fmt.Errorf("%q: want nats://HOST:PORT", r)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return fmt.Errorf("%q: want nats://HOST:PORT", r)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: port %q is outside 1..65535", r, port)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("%q: want nats://HOST:PORT, with no path, query or user", r)
	}
	return nil
}

// apply sets the cluster's options on opts.
func (c ClusterConfig) apply(opts *server.Options) {
	if !c.Enabled() {
		return
	}
	opts.Cluster = server.ClusterOpts{Name: c.Name, Host: c.Host, Port: c.Port, Advertise: c.Advertise}
	opts.Routes = server.RoutesFromStr(strings.Join(c.Routes, ","))
	opts.LameDuckDuration = c.LameDuckDuration
	opts.LameDuckGracePeriod = c.LameDuckGracePeriod
	// A member down for a while is dialled every second by each of the
	// others: its first failure is reported, then one in routeErrorReports
	// (once in half a minute), not every one.
	opts.ReconnectErrorReports = routeErrorReports
	opts.ConnectErrorReports = routeErrorReports
}

// routeErrorReports is how many failed attempts to reach a member make
// one error in the log, after the first.
const routeErrorReports = 30
