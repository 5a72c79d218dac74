package credentials

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Defaults of Config: deploy/'s names.
const (
	DefaultNamespace = "quota-system"
	DefaultService   = "quota-webhook"
)

// Config says where Write writes and whom the serving certificate names.
type Config struct {
	// Dir receives the files; made if needed. Required.
	Dir string
	// Namespace and Service name the webhook's Service, whose DNS names
	// the serving certificate holds. Zero: DefaultNamespace,
	// DefaultService.
	Namespace, Service string
}

// Files lists what Write writes into Config.Dir.
func Files() []string {
	files := []string{AuthFile, CAFile, CertFile, KeyFile}
	for _, c := range Components {
		files = append(files, c+SeedSuffix)
	}
	return files
}

// Write writes a new set of credentials: the components' NKeys with the
// authorization block admitting them, and the webhook's CA and serving
// pair. It refuses to overwrite any existing file: new keys lock out the
// running components until each gets its new one.
func Write(cfg Config) error {
	if strings.TrimSpace(cfg.Dir) == "" {
		return errors.New("credentials: no directory given")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if cfg.Service == "" {
		cfg.Service = DefaultService
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return err
	}
	for _, f := range Files() {
		if _, err := os.Stat(filepath.Join(cfg.Dir, f)); err == nil {
			return fmt.Errorf("%s already exists: move the old credentials aside first (new keys lock out components still holding the old ones)", filepath.Join(cfg.Dir, f))
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := nkeysWrite(cfg.Dir); err != nil {
		return err
	}
	return tlsWrite(cfg.Dir, cfg.Namespace, cfg.Service)
}
