package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quotaledger/quota/ledger"
)

// connect starts an embedded server taking messages of at most
// maxPayload bytes and connects to it.
func connect(t *testing.T, maxPayload int32) *nats.Conn {
	t.Helper()
	srv, err := ledger.StartEmbedded(ledger.EmbeddedConfig{Port: ledger.RandomPort, StoreDir: t.TempDir(), MaxPayload: maxPayload})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// serve answers every request on subject with what answer returns for
// it, sent by send.
func serve(t *testing.T, nc *nats.Conn, subject string, send func(m *nats.Msg) error) {
	t.Helper()
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		if err := send(m); err != nil {
			t.Errorf("send: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
}

func TestRequestGetsTheWholeAnswer(t *testing.T) {
	nc := connect(t, 4096)
	big := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB: 18 parts of at most 3840 bytes
	small := []byte(`{"list":{}}`)
	serve(t, nc, "q.big", func(m *nats.Msg) error { return ledger.SendAnswer(nc, m, big) })
	serve(t, nc, "q.small", func(m *nats.Msg) error { return ledger.SendAnswer(nc, m, small) })
	serve(t, nc, "q.edge", func(m *nats.Msg) error { return ledger.SendAnswer(nc, m, big[:4096]) })

	got, err := ledger.RequestAnswer(context.Background(), nc, "q.big", []byte("?"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Data, big) {
		t.Errorf("answer in parts: %d bytes back, want the %d sent", len(got.Data), len(big))
	}
	if got.Header.Get(ledger.AnswerPartsHeader) != "18" {
		t.Errorf("%s %q, want 18", ledger.AnswerPartsHeader, got.Header.Get(ledger.AnswerPartsHeader))
	}
	for subject, want := range map[string][]byte{"q.small": small, "q.edge": big[:4096]} {
		// An answer that fits one message is a plain message, which a
		// client unaware of parts reads whole.
		plain, err := nc.Request(subject, []byte("?"), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(plain.Data, want) || plain.Header.Get(ledger.AnswerPartsHeader) != "" {
			t.Errorf("%s: %d bytes, headers %v; want the %d bytes sent, plain", subject, len(plain.Data), plain.Header, len(want))
		}
		got, err := ledger.RequestAnswer(context.Background(), nc, subject, []byte("?"), 5*time.Second)
		if err != nil || !bytes.Equal(got.Data, want) {
			t.Errorf("%s through Request: %d bytes, %v", subject, len(got.Data), err)
		}
	}
}

func TestRequestRefusesPartsThatDoNotFit(t *testing.T) {
	nc := connect(t, 4096)
	part := func(reply string, i, n string) error {
		m := nats.NewMsg(reply)
		m.Header.Set(ledger.AnswerPartHeader, i)
		m.Header.Set(ledger.AnswerPartsHeader, n)
		m.Data = []byte("x")
		return nc.PublishMsg(m)
	}
	serve(t, nc, "q.skips", func(m *nats.Msg) error {
		if err := part(m.Reply, "1", "3"); err != nil {
			return err
		}
		return part(m.Reply, "3", "3")
	})
	serve(t, nc, "q.bad", func(m *nats.Msg) error { return part(m.Reply, "1", "lots") })
	serve(t, nc, "q.short", func(m *nats.Msg) error { return part(m.Reply, "1", "2") })
	for subject, want := range map[string]string{
		"q.skips": `expected part 2 of 3, got part "3" of "3"`,
		"q.bad":   `Quota-Parts "lots"`,
		"q.short": "part 2 of 2: nats: timeout",
	} {
		_, err := ledger.RequestAnswer(context.Background(), nc, subject, nil, 300*time.Millisecond)
		if !errors.Is(err, ledger.ErrAnswerParts) || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("%s: %v, want ledger.ErrAnswerParts saying %q", subject, err, want)
		}
	}
}

func TestRequestWithoutResponders(t *testing.T) {
	nc := connect(t, 4096)
	if _, err := ledger.RequestAnswer(context.Background(), nc, "q.nobody", nil, time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("no subscriber: %v, want nats.ErrNoResponders", err)
	}
}

// TestRequestEndsWithItsContext cancels a request no one answers: it ends
// at once with the context's cause, not at its timeout.
func TestRequestEndsWithItsContext(t *testing.T) {
	nc := connect(t, 4096)
	serve(t, nc, "q.silent", func(*nats.Msg) error { return nil })
	refused := errors.New("refused by the server")
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(refused) })
	start := time.Now()
	_, err := ledger.RequestAnswer(ctx, nc, "q.silent", nil, time.Minute)
	if !errors.Is(err, refused) || time.Since(start) > 10*time.Second {
		t.Errorf("after %s: %v, want the context's cause at once", time.Since(start), err)
	}
	if _, err := ledger.RequestAnswer(context.Background(), nc, "q.silent", nil, 100*time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Errorf("no answer: %v, want nats.ErrTimeout", err)
	}
}
