package ledgertest

import (
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// Relay is a TCP relay on loopback: every connection it accepts is
// joined to a new connection to its target. Cut closes them all and
// refuses new ones until Heal, which is how a test cuts a network path
// (a cluster member's routes) without touching the processes at either
// end.
type Relay struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// StartRelay starts a relay to target (HOST:PORT) on a free loopback
// port other than those of avoid (ports picked for others, free until
// they listen), stopped when the test ends.
func StartRelay(t testing.TB, target string, avoid ...int) *Relay {
	t.Helper()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	var ln net.Listener
	for ln == nil {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(avoid, l.Addr().(*net.TCPAddr).Port) {
			held = append(held, l) // kept until another port is found
			continue
		}
		ln = l
	}
	r := &Relay{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	r.wg.Go(r.accept)
	t.Cleanup(r.close)
	return r
}

// Addr is the relay's HOST:PORT.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// Cut closes every connection through the relay and refuses new ones.
func (r *Relay) Cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = true
	for c := range r.conns {
		c.Close()
	}
}

// Heal lets new connections through again.
func (r *Relay) Heal() {
	r.mu.Lock()
	r.cut = false
	r.mu.Unlock()
}

func (r *Relay) close() {
	r.ln.Close()
	r.Cut()
	r.wg.Wait()
}

func (r *Relay) accept() {
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		r.mu.Lock()
		cut := r.cut
		r.mu.Unlock()
		if cut {
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", r.target)
		if err != nil {
			in.Close()
			continue
		}
		if !r.track(in, out) {
			continue
		}
		r.wg.Go(func() { r.pipe(in, out) })
		r.wg.Go(func() { r.pipe(out, in) })
	}
}

// track records a joined pair, or closes it when the relay was cut
// meanwhile.
func (r *Relay) track(in, out net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cut {
		in.Close()
		out.Close()
		return false
	}
	r.conns[in], r.conns[out] = struct{}{}, struct{}{}
	return true
}

// pipe copies from one side to the other until either closes, then
// closes both.
func (r *Relay) pipe(from, to net.Conn) {
	_, _ = io.Copy(to, from)
	from.Close()
	to.Close()
	r.mu.Lock()
	delete(r.conns, from)
	delete(r.conns, to)
	r.mu.Unlock()
}

// Mesh is the routes of a cluster's members through relays: member i
// dials member j (j ≠ i) through a relay of its own, and itself
// directly, so that cutting member i's relays and those to it cuts
// every route it has, and nothing else. A member that hears of another
// from a third (nats-server's gossip) would route to it at the address
// it advertises, around the relays: each is to advertise Advertise[i],
// a relay that is always cut.
type Mesh struct {
	// Routes are each member's route URLs, in member order.
	Routes [][]string
	// Advertise are the members' advertised route addresses.
	Advertise []string
	// relays[i][j] carries member i's route to member j (nil for i = j).
	relays [][]*Relay
}

// StartMesh starts the relays between members whose route ports are
// ports, on ports other than those and avoid's.
func StartMesh(t testing.TB, ports []int, avoid ...int) *Mesh {
	t.Helper()
	n := len(ports)
	avoid = append(slices.Clone(avoid), ports...)
	m := &Mesh{Routes: make([][]string, n), relays: make([][]*Relay, n)}
	for i := range n {
		deadEnd := StartRelay(t, "127.0.0.1:1", avoid...)
		deadEnd.Cut()
		m.Advertise = append(m.Advertise, deadEnd.Addr())
		m.relays[i] = make([]*Relay, n)
		for j := range n {
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[j]))
			if i != j {
				m.relays[i][j] = StartRelay(t, addr, avoid...)
				addr = m.relays[i][j].Addr()
			}
			m.Routes[i] = append(m.Routes[i], "nats://"+addr)
		}
	}
	return m
}

// Cut cuts every route of member i: it is partitioned from the others.
func (m *Mesh) Cut(i int) { m.each(i, (*Relay).Cut) }

// Heal lets member i's routes through again.
func (m *Mesh) Heal(i int) { m.each(i, (*Relay).Heal) }

func (m *Mesh) each(i int, f func(*Relay)) {
	for j := range m.relays {
		if j != i {
			f(m.relays[i][j])
			f(m.relays[j][i])
		}
	}
}
