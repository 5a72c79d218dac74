// Command image builds the `quota` container image without a container
// engine and without pulling a base image: one layer holding the static
// binary as /quota, run as user 65532, written as an OCI image layout (for
// skopeo, crane or podman to push or load) and as a tarball `docker load`
// takes. It holds what deploy/Dockerfile's image holds; its layer and config
// carry fixed timestamps, so that the same binary makes the same image.
//
//	CGO_ENABLED=0 go build -o quota ./cmd/quota
//	go run ./deploy/image -binary quota -out bin/image
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.binary, "binary", "", "the static quota binary (CGO_ENABLED=0)")
	flag.StringVar(&cfg.out, "out", "", "directory of the OCI image layout to write (made; refused if it exists)")
	flag.StringVar(&cfg.tarball, "tarball", "", "also write a tarball for docker load here")
	flag.StringVar(&cfg.ref, "ref", "ghcr.io/quotaledger/quota:latest", "the image's name and tag")
	flag.StringVar(&cfg.arch, "arch", "amd64", "the binary's architecture")
	flag.Parse()
	digest, err := build(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(2)
	}
	fmt.Printf("%s %s in %s\n", cfg.ref, digest, cfg.out)
}
