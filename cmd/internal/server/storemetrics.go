package server

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/quotaledger/quota/ledger"
	"github.com/quotaledger/quota/projector"
)

// storeScrapeTimeout bounds the questions one scrape asks JetStream.
const storeScrapeTimeout = 5 * time.Second

var (
	logBytesDesc = prometheus.NewDesc("quota_log_bytes",
		"Bytes the log (the event stream) holds.", nil, nil)
	logMessagesDesc = prometheus.NewDesc("quota_log_messages",
		"Events the log holds.", nil, nil)
	logFirstSeqDesc = prometheus.NewDesc("quota_log_first_sequence",
		"The log's first sequence: with --retention, one after the checkpoint it starts after.", nil, nil)
	logFirstTimeDesc = prometheus.NewDesc("quota_log_first_timestamp_seconds",
		"When the log's first event was stored, in Unix seconds (0: the log is empty): time() minus it is the log's age, about the retention plus an eighth once it applies.", nil, nil)
	storeBytesDesc = prometheus.NewDesc("quota_store_bytes",
		"Bytes of JetStream file storage the ledger's account uses: the log, the checkpoints, the dead letters and the key-value buckets.", nil, nil)
	storeLimitDesc = prometheus.NewDesc("quota_store_limit_bytes",
		"The limit quota_store_bytes is held to: the account's JetStream storage limit when it has one; else, with the embedded server, the size of the file system under --data, which the projection file shares. Not reported when neither is known.", nil, nil)
	volumeFreeDesc = prometheus.NewDesc("quota_data_volume_free_bytes",
		"Bytes free on the file system under --data.", nil, nil)
	retentionPurgedDesc = prometheus.NewDesc("quota_retention_purged_events_total",
		"Events this server removed from the log (--retention), each older than the retention and covered by a checkpoint.", nil, nil)
	retentionFailuresDesc = prometheus.NewDesc("quota_retention_failures_total",
		"Rounds of trimming that failed (an archive that cannot be written, a purge refused); the events stay in the log.", nil, nil)
)

// storeCollector reports the log's and the store's size at every scrape.
type storeCollector struct {
	js       jetstream.JetStream
	stream   *ledger.Stream
	dataDir  string
	embedded bool
	// retainer is nil without --retention.
	retainer *projector.Retainer
}

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{logBytesDesc, logMessagesDesc, logFirstSeqDesc, logFirstTimeDesc,
		storeBytesDesc, storeLimitDesc, volumeFreeDesc, retentionPurgedDesc, retentionFailuresDesc} {
		ch <- d
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), storeScrapeTimeout)
	defer cancel()
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	if st, err := c.stream.Status(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(logBytesDesc, err)
	} else {
		gauge(logBytesDesc, float64(st.Bytes))
		gauge(logMessagesDesc, float64(st.Messages))
		gauge(logFirstSeqDesc, float64(st.FirstSeq))
		first := 0.0
		if !st.FirstTime.IsZero() {
			first = float64(st.FirstTime.UnixNano()) / 1e9
		}
		gauge(logFirstTimeDesc, first)
	}
	size, free, ok := volumeBytes(c.dataDir)
	if ok {
		gauge(volumeFreeDesc, float64(free))
	}
	if ai, err := c.js.AccountInfo(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(storeBytesDesc, err)
	} else {
		gauge(storeBytesDesc, float64(ai.Store))
		switch {
		case ai.Limits.MaxStore > 0:
			gauge(storeLimitDesc, float64(ai.Limits.MaxStore))
		case c.embedded && ok:
			gauge(storeLimitDesc, float64(size))
		}
	}
	if c.retainer != nil {
		ch <- prometheus.MustNewConstMetric(retentionPurgedDesc, prometheus.CounterValue, float64(c.retainer.Purged()))
		ch <- prometheus.MustNewConstMetric(retentionFailuresDesc, prometheus.CounterValue, float64(c.retainer.Failures()))
	}
}
