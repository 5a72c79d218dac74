package kubecluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	apiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// Limits of Start.
const (
	// EtcdStartTimeout bounds the embedded etcd's start.
	EtcdStartTimeout = 60 * time.Second
)

// LogsEnv, set to anything, keeps kube-apiserver's and etcd's logs on
// standard error.
const LogsEnv = "KUBECLUSTER_LOGS"

// Options configure Start. The zero value starts kube-apiserver with its
// defaults.
type Options struct {
	// APIServerFlags are extra kube-apiserver flags, such as
	// "--disable-admission-plugins=ResourceQuota". Zero: none.
	APIServerFlags []string
}

// Cluster is a running kube-apiserver and its etcd.
type Cluster struct {
	// Config reaches the apiserver with its loopback credentials, which
	// are allowed everything.
	Config *rest.Config
	// Kubeconfig is a kubeconfig file with the same credentials, for
	// subprocesses (--kubeconfig). It reaches the apiserver through a
	// relay that StopAPI and StartAPI take away and give back.
	Kubeconfig string
	// Client is a clientset of Config.
	Client kubernetes.Interface
	// Etcd is a client of the apiserver's etcd.
	Etcd *clientv3.Client
	// EtcdPrefix is the prefix under which the apiserver keeps objects.
	EtcdPrefix string
	// Dir is a directory of the cluster's own (the kubeconfig, etcd's data).
	Dir string

	proxy *proxy
}

// StopAPI takes the apiserver away from the clients of Kubeconfig: their
// connections are closed and new ones refused, as in an outage. Config and
// Client still reach it.
func (c *Cluster) StopAPI() { c.proxy.stop() }

// StartAPI gives the apiserver back to the clients of Kubeconfig, on the
// same address.
func (c *Cluster) StartAPI(t testing.TB) { c.proxy.restart(t) }

// Start starts etcd and kube-apiserver, waits until the apiserver is healthy
// and its default namespace exists, and stops both when t ends.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if os.Getenv(LogsEnv) == "" {
		// kube-apiserver logs hundreds of lines at start and stop.
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	}
	dir := t.TempDir()
	etcdURL := startEtcd(t, filepath.Join(dir, "etcd"))

	prefix := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	storage := storagebackend.NewDefaultConfig("/registry-"+prefix, nil)
	storage.Transport.ServerList = []string{etcdURL}
	server, err := apiservertesting.StartTestServer(t, apiservertesting.NewDefaultTestServerOptions(), opts.APIServerFlags, storage)
	if err != nil {
		t.Fatalf("start kube-apiserver: %v", err)
	}
	t.Cleanup(server.TearDownFn)

	c := &Cluster{Config: rest.CopyConfig(server.ClientConfig), Etcd: server.EtcdClient, EtcdPrefix: server.EtcdStoragePrefix, Dir: dir}
	c.Client, err = kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	c.proxy = startProxy(t, u.Host)
	relayed := rest.CopyConfig(c.Config)
	relayed.Host = "https://" + c.proxy.addr
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, relayed); err != nil {
		t.Fatalf("write kubeconfig: %v", err)
	}
	return c
}

// startEtcd starts an embedded single-member etcd with its data in dir and
// returns its client URL.
func startEtcd(t testing.TB, dir string) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "kubecluster"
	cfg.Dir = dir
	cfg.LogLevel = "error"
	if os.Getenv(LogsEnv) == "" {
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	}
	clientURL, peerURL := freeURL(t), freeURL(t)
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		t.Fatalf("etcd stopped while starting: %v", err)
	case <-time.After(EtcdStartTimeout):
		e.Server.Stop()
		e.Close()
		t.Fatalf("etcd did not start within %s", EtcdStartTimeout)
	}
	t.Cleanup(e.Close)
	return clientURL.String()
}

// freeURL is http://127.0.0.1:PORT with a port that was free a moment ago.
func freeURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}

func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kubecluster"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.TLSClientConfig.CAData,
		TLSServerName:            cfg.TLSClientConfig.ServerName,
		InsecureSkipTLSVerify:    cfg.TLSClientConfig.Insecure,
	}
	kc.AuthInfos["kubecluster"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["kubecluster"] = &clientcmdapi.Context{Cluster: "kubecluster", AuthInfo: "kubecluster", Namespace: "default"}
	kc.CurrentContext = "kubecluster"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// CreateNamespace creates namespace name and its "default" ServiceAccount
// (which the ServiceAccount admission plugin requires of a pod, and which
// no controller creates here).
func (c *Cluster) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	_, err = c.Client.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create the default ServiceAccount of %s: %v", name, err)
	}
}

// Compact compacts the apiserver's etcd up to its current revision, so
// that watches from an older resourceVersion end with 410 Gone. It returns
// the revision compacted to.
func (c *Cluster) Compact(t testing.TB) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A write makes the current revision one that nothing holds yet.
	resp, err := c.Etcd.Put(ctx, c.EtcdPrefix+"/kubecluster-compact-marker", time.Now().String())
	if err != nil {
		t.Fatalf("etcd put: %v", err)
	}
	rev := resp.Header.Revision
	if _, err := c.Etcd.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("etcd compact to %d: %v", rev, err)
	}
	return rev
}

// String names the apiserver, for logs.
func (c *Cluster) String() string { return fmt.Sprintf("kube-apiserver at %s", c.Config.Host) }
