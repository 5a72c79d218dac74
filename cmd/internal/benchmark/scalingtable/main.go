package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/quotaledger/quota/cmd/internal/benchmark"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: scalingtable REPORT.json...")
		os.Exit(2)
	}
	fmt.Println("| events | namespaces | live (peak) | ingest ev/s | raw publish ev/s | projection ev/s | replay ev/s | raw read ev/s | describe req/s (1 client) | peak RSS MiB: ingest, projection, reserving, replay | bbolt MiB | bbolt B/live object |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
	for _, path := range os.Args[1:] {
		b, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var rep benchmark.Report
		if err := json.Unmarshal(b, &rep); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(1)
		}
		v := func(name string) string {
			f := rep.Figure(name)
			if f == nil || f.Status != benchmark.Measured {
				return "–"
			}
			switch f.Unit {
			case benchmark.UnitBytes:
				return fmt.Sprintf("%.1f", f.Value/(1<<20))
			default:
				return fmt.Sprintf("%.0f", f.Value)
			}
		}
		rss := v(benchmark.FigurePeakRSSIngest) + ", " + v(benchmark.FigurePeakRSSProjection) + ", " +
			v(benchmark.FigurePeakRSSReserving) + ", " + v(benchmark.FigurePeakRSSReplay)
		perObject := "–"
		if f := rep.Figure(benchmark.FigureProjectionFile); f != nil && f.Status == benchmark.Measured && rep.Stats.Live > 0 {
			perObject = fmt.Sprintf("%.0f", f.Value/float64(rep.Stats.Live))
		}
		fmt.Printf("| %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			rep.Stats.Events, rep.Workload.Namespaces, rep.Stats.LiveMax,
			v(benchmark.FigureIngest), v(benchmark.FigureRawPublish), v(benchmark.FigureProjection), v(benchmark.FigureReplay),
			v(benchmark.FigureRawRead), v(benchmark.FigureDescribe1), rss, v(benchmark.FigureProjectionFile), perObject)
	}
}
