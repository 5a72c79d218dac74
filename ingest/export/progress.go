package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/quotaledger/quota/ledger"
)

// The feed's progress.
//
// A reservation made while the ledger is fed by the exporter ends on the
// feed's progress (ledger.ReleaseByFeed): it is released once the log
// shows that it holds every change of the reservation's resource up to a
// moment later than the reservation plus the API server's request
// timeout. The exporter states that with Progress events. Every
// ProgressInterval, each stream takes the time, asks the API server for
// the resource's current resourceVersion (a consistent list of one item),
// and, once everything its watch delivered up to that version is
// acknowledged in the log (an event or a bookmark at or past it), notes
// the point: the version, and the time taken before asking. A list makes
// a point too, at its version and the time it started. The points noted
// are appended together as one Progress event per ProgressInterval.
//
// Progress needs comparable resourceVersions (Kubernetes 1.35 made them
// so, KEP-5504) and, on a quiet resource, the watch's bookmarks, which
// the API server's watch cache sends about every minute: a resource
// without them only moves on its own events.

// DefaultProgressInterval is how often each stream asks the API server
// for its resource's current version and the points noted are appended.
const DefaultProgressInterval = 10 * time.Second

// probe is a point asked for and not yet reached by the stream.
type probe struct {
	rv    string
	at    time.Time
	asked time.Time
}

// feedPoints gathers the points the streams note until they are
// appended.
type feedPoints struct {
	mu     sync.Mutex
	points map[string]ledger.FeedPoint
}

// note keeps p, unless a later point of its resource is waiting.
func (fp *feedPoints) note(p ledger.FeedPoint) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if old, ok := fp.points[p.Resource]; ok && !p.At.After(old.At) {
		return
	}
	if fp.points == nil {
		fp.points = map[string]ledger.FeedPoint{}
	}
	fp.points[p.Resource] = p
}

// take returns the waiting points in resource order and forgets them.
func (fp *feedPoints) take() []ledger.FeedPoint {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	out := make([]ledger.FeedPoint, 0, len(fp.points))
	for _, p := range fp.points {
		out = append(out, p)
	}
	clear(fp.points)
	slices.SortFunc(out, func(a, b ledger.FeedPoint) int { return strings.Compare(a.Resource, b.Resource) })
	return out
}

// appendProgress appends the noted points as a Progress event every
// ProgressInterval until ctx ends. Points that could not be appended are
// noted again, so that the next event carries them (or later ones).
func (x *Exporter) appendProgress(ctx context.Context) {
	tick := time.NewTicker(x.cfg.ProgressInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		points := x.points.take()
		if len(points) == 0 {
			continue
		}
		ev := ledger.Event{Version: ledger.EncodingVersion, Type: ledger.Progress, Progress: points, Source: "export " + x.cfg.Identity}
		if _, err := x.stream.Append(ctx, ev, ledger.AppendOptions{MsgID: progressMsgID(points)}); err != nil {
			for _, p := range points {
				x.points.note(p)
			}
			if ctx.Err() == nil {
				x.log.Warn("cannot append the feed's progress; reservations are held until it is", "err", err)
			}
			continue
		}
		for _, p := range points {
			x.metrics.progressed(p.Resource, p.At)
		}
	}
}

// progressMsgID names a Progress event by its points: one sent again
// after a lost acknowledgement is a duplicate.
func progressMsgID(points []ledger.FeedPoint) string {
	h := sha256.New()
	for _, p := range points {
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00", p.Resource, p.ResourceVersion, p.At.UnixNano())
	}
	return "progress/" + hex.EncodeToString(h.Sum(nil)[:16])
}

// probeLoop asks for the resource's current version every
// ProgressInterval, once the stream has listed, while no earlier probe
// waits, until ctx ends.
func (s *stream) probeLoop(ctx context.Context) {
	tick := time.NewTicker(s.x.cfg.ProgressInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		idle := s.probe == nil && s.listed && !s.failed && !s.incomparable
		s.mu.Unlock()
		if !idle {
			continue
		}
		at := time.Now()
		rv, err := s.currentVersion(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("cannot read the resource's current resourceVersion; the feed's progress waits", "err", err)
			}
			continue
		}
		s.mu.Lock()
		s.probe = &probe{rv: rv, at: at, asked: time.Now()}
		s.reached()
		s.mu.Unlock()
	}
}

// currentVersion is the resource's resourceVersion now: the version of a
// consistent list of one item (metadata only).
func (s *stream) currentVersion(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	body, err := s.x.rest.Get().AbsPath(s.res.path()).SetHeader("Accept", acceptMetadataList).
		Param("limit", "1").DoRaw(ctx)
	if err != nil {
		return "", err
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return "", fmt.Errorf("decode the list of %s: %w", s.res.Name(), err)
	}
	if list.Metadata.ResourceVersion == "" {
		return "", fmt.Errorf("the list of %s has no resourceVersion", s.res.Name())
	}
	return list.Metadata.ResourceVersion, nil
}

// reached notes the probe's point once everything up to its version is
// in the log (ackedRV at or past it). s.mu is held; call it wherever
// ackedRV moves.
func (s *stream) reached() {
	if s.probe == nil || s.ackedRV == "" || s.failed {
		return
	}
	c, err := resourceversion.CompareResourceVersion(s.ackedRV, s.probe.rv)
	if err != nil {
		// Not comparable (an aggregated API's own versions): no
		// progress is recorded for the resource.
		s.incomparable = true
		s.probe = nil
		s.log.Warn("the resource's resourceVersions are not comparable: the feed records no progress for it, and reservations of it are held until their objects appear", "err", err)
		return
	}
	if c < 0 {
		return
	}
	s.x.points.note(ledger.FeedPoint{Resource: s.res.Name(), ResourceVersion: s.probe.rv, At: s.probe.at.UTC()})
	s.probe = nil
}

// behind says, for Ready, how long the stream has waited for its watch
// to reach the version it asked for, if longer than FeedBehind.
func (s *stream) behind(now time.Time) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.probe == nil {
		return 0, false
	}
	waited := now.Sub(s.probe.asked)
	return waited, waited > FeedBehind
}

// FeedBehind is how long a stream's watch may take to reach the version
// it asked for before the leader is no longer ready: more than the watch
// cache's bookmark interval (a minute) and ProgressInterval.
const FeedBehind = 3 * time.Minute
