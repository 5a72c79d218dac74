package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the image's user and group: the "nonroot" of distroless images.
const User = "65532:65532"

// epoch stamps the layer's file and the image's creation, so that the same
// binary makes the same image.
var epoch = time.Unix(0, 0).UTC()

type config struct {
	binary, out, tarball, ref, arch string
}

// build writes the image of cfg.binary and returns its digest.
func build(cfg config) (v1.Hash, error) {
	if cfg.binary == "" || cfg.out == "" {
		return v1.Hash{}, errors.New("-binary and -out are required")
	}
	if _, err := os.Stat(cfg.out); err == nil {
		return v1.Hash{}, fmt.Errorf("%s exists: remove it first", cfg.out)
	}
	ref, err := name.NewTag(cfg.ref)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("-ref %s: %w", cfg.ref, err)
	}
	bin, err := os.ReadFile(cfg.binary)
	if err != nil {
		return v1.Hash{}, err
	}
	if ok, err := static(cfg.binary); err != nil || !ok {
		return v1.Hash{}, fmt.Errorf("%s is not a static ELF executable (%v): build it with CGO_ENABLED=0", cfg.binary, err)
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	if err := tw.WriteHeader(&tar.Header{Name: "quota", Mode: 0o755, Size: int64(len(bin)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return v1.Hash{}, err
	}
	if _, err := tw.Write(bin); err != nil {
		return v1.Hash{}, err
	}
	if err := tw.Close(); err != nil {
		return v1.Hash{}, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return v1.Hash{}, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return v1.Hash{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", cfg.arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.User = User
	cf.Config.Entrypoint = []string{"/quota"}
	cf.Config.Labels = map[string]string{"org.opencontainers.image.source": "https://github.com/quotaledger/quota"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return v1.Hash{}, err
	}
	lp, err := layout.Write(cfg.out, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.String()})); err != nil {
		return v1.Hash{}, err
	}
	if cfg.tarball != "" {
		if err := tarball.WriteToFile(cfg.tarball, ref, img); err != nil {
			return v1.Hash{}, err
		}
	}
	return img.Digest()
}

// static reports whether the file at path is an ELF executable that asks
// for no interpreter: a static binary, which an image with nothing else in
// it can run.
func static(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return f.Type == elf.ET_EXEC || f.Type == elf.ET_DYN, nil
}
