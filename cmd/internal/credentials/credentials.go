package credentials

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Defaults of Config: deploy/'s names.
const (
	DefaultNamespace = "quota-system"
	DefaultService   = "quota-webhook"
	// DefaultAPIServerDir is where, on each control-plane host, the files
	// kube-apiserver reads are put.
	DefaultAPIServerDir = "/etc/kubernetes/quota-webhook"
)

// Config says where Write and Renew write and whom the certificates name.
type Config struct {
	// Dir receives the files; made if needed. Required.
	Dir string
	// Namespace and Service name the webhook's Service, whose DNS names
	// the serving certificate holds and whose host names kube-apiserver's
	// user in the kubeconfig. Renew does not read them: a renewed
	// certificate names what the one it replaces named. Zero:
	// DefaultNamespace, DefaultService.
	Namespace, Service string
	// APIServerDir is the absolute directory, on each control-plane host,
	// from which kube-apiserver reads the client pair, the kubeconfig and
	// the admission configuration: the last two name files in it. Renew
	// does not read it. Zero: DefaultAPIServerDir.
	APIServerDir string
}

// Validate reports every problem of c in one error.
func (c *Config) Validate() error {
	var problems []string
	if strings.TrimSpace(c.Dir) == "" {
		problems = append(problems, "no directory given")
	}
	if c.APIServerDir != "" && !filepath.IsAbs(c.APIServerDir) {
		problems = append(problems, fmt.Sprintf("the API server's directory %q is not absolute: kube-apiserver requires an absolute kubeConfigFile", c.APIServerDir))
	}
	if len(problems) > 0 {
		return fmt.Errorf("credentials: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Files lists what Write writes into Config.Dir.
func Files() []string {
	files := []string{AuthFile}
	for _, c := range Components {
		files = append(files, c+SeedSuffix)
	}
	return append(files, certificateFiles()...)
}

// certificateFiles lists what Write writes of the certificates: all but
// the NATS keys.
func certificateFiles() []string {
	return []string{CAFile, CAKeyFile, ClientCAFile, ClientCAKeyFile, CertFile, KeyFile,
		ClientCertFile, ClientKeyFile, KubeconfigFile, AdmissionConfigFile}
}

// Renewed lists what Renew writes again: the serving pair and
// kube-apiserver's client pair.
func Renewed() []string {
	return []string{CertFile, KeyFile, ClientCertFile, ClientKeyFile}
}

// Write writes a new set of credentials: the components' NKeys with the
// authorization block admitting them; the webhook's CA (with its key) and
// serving pair; the client CA (with its key) and kube-apiserver's client
// pair, with the kubeconfig and admission configuration that make the API
// server present it. It refuses to overwrite any existing file.
func Write(cfg Config) error {
	return write(cfg, time.Now())
}

func write(cfg Config, now time.Time) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if cfg.Service == "" {
		cfg.Service = DefaultService
	}
	if cfg.APIServerDir == "" {
		cfg.APIServerDir = DefaultAPIServerDir
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return err
	}
	for _, f := range Files() {
		if _, err := os.Stat(filepath.Join(cfg.Dir, f)); err == nil {
			return fmt.Errorf("%s: %w: move the old credentials aside first (new keys lock out components still holding the old ones), or renew the certificates with --renew", filepath.Join(cfg.Dir, f), ErrExists)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := nkeysWrite(cfg.Dir); err != nil {
		return err
	}
	ca, err := newAuthority("quota webhook CA ("+cfg.Namespace+")", now)
	if err != nil {
		return err
	}
	clientCA, err := newAuthority("quota webhook client CA ("+cfg.Namespace+")", now)
	if err != nil {
		return err
	}
	names := ServiceNames(cfg.Namespace, cfg.Service)
	pairs, err := issuePairs(ca, clientCA, servingLeaf(names), now)
	if err != nil {
		return err
	}
	caFiles, err := ca.files(CAFile, CAKeyFile)
	if err != nil {
		return err
	}
	clientCAFiles, err := clientCA.files(ClientCAFile, ClientCAKeyFile)
	if err != nil {
		return err
	}
	files := append(append(caFiles, clientCAFiles...), pairs...)
	files = append(files,
		file{KubeconfigFile, kubeconfig(cfg.APIServerDir, names[0])},
		file{AdmissionConfigFile, admissionConfig(cfg.APIServerDir)})
	return writeFiles(cfg.Dir, files)
}

// Renew issues a new serving pair and a new client pair for kube-apiserver
// with the CAs kept in Config.Dir, so that what trusts them (the webhook
// configuration's caBundle, the webhook's --client-ca) stays valid. The
// serving certificate names what the one it replaces named. The NATS
// keys, the CAs, the kubeconfig and the admission configuration are left
// as they are.
func Renew(cfg Config) error {
	return renew(cfg, time.Now())
}

func renew(cfg Config, now time.Time) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	ca, err := loadAuthority(cfg.Dir, CAFile, CAKeyFile, now)
	if err != nil {
		return fmt.Errorf("renew: %w", err)
	}
	clientCA, err := loadAuthority(cfg.Dir, ClientCAFile, ClientCAKeyFile, now)
	if err != nil {
		return fmt.Errorf("renew: %w", err)
	}
	old, err := readCertificate(filepath.Join(cfg.Dir, CertFile))
	if err != nil {
		return fmt.Errorf("renew: the serving certificate to renew: %w", err)
	}
	if len(old.DNSNames) == 0 {
		return fmt.Errorf("renew: %s names no DNS name to renew it for", filepath.Join(cfg.Dir, CertFile))
	}
	pairs, err := issuePairs(ca, clientCA, servingLeaf(old.DNSNames), now)
	if err != nil {
		return fmt.Errorf("renew: %w", err)
	}
	return writeFiles(cfg.Dir, pairs)
}

// file is a file to write, readable by its owner only.
type file struct {
	name string
	data []byte
}

// writeFiles writes each file whole or not at all: into a temporary file
// of dir, renamed over its name.
func writeFiles(dir string, files []file) error {
	for _, f := range files {
		tmp, err := os.CreateTemp(dir, "."+f.name+".*")
		if err != nil {
			return err
		}
		_, err = tmp.Write(f.data)
		if err == nil {
			err = tmp.Chmod(0o600)
		}
		if err == nil {
			err = tmp.Sync()
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), filepath.Join(dir, f.name))
		}
		if err != nil {
			_ = os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %w", filepath.Join(dir, f.name), err)
		}
	}
	return nil
}
