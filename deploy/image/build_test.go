package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestBuild builds the image of a static binary and reads the layout back:
// one layer holding the binary as /quota, executable, run as 65532 with it
// as the entrypoint; the same binary makes the same digest; a binary that
// needs a dynamic loader is refused.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "quota")
	gobuild := exec.Command("go", "build", "-o", bin, src)
	gobuild.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	gobuild.Dir = dir
	if out, err := gobuild.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "image")
	digest, err := build(config{binary: bin, out: out, tarball: filepath.Join(dir, "image.tar"), ref: "example.com/quota:test", arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := build(config{binary: bin, out: filepath.Join(dir, "again"), ref: "example.com/quota:test", arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if again != digest {
		t.Errorf("the same binary made %s, then %s", digest, again)
	}

	index, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err := index.Image(digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"/quota"}) || cf.OS != "linux" {
		t.Errorf("config: user %q, entrypoint %q, os %q", cf.Config.User, cf.Config.Entrypoint, cf.OS)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers (%v), want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	content, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(bin)
	if h.Name != "quota" || h.Mode != 0o755 || !bytes.Equal(content, want) {
		t.Errorf("layer entry %q mode %o, %d bytes; want quota, 755, the binary's %d", h.Name, h.Mode, len(content), len(want))
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("the layer holds more than the binary: %v", err)
	}

	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no dynamic binary at hand to refuse")
	}
	sh, _ = filepath.EvalSymlinks(sh)
	if _, err := build(config{binary: sh, out: filepath.Join(dir, "sh"), ref: "example.com/quota:test", arch: "amd64"}); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("an image of %s: %v; want refused as not static", sh, err)
	}
}
