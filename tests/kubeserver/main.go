// Command kubeserver runs an embedded etcd and a real kube-apiserver in one process,
// for the contract tests only. It is never shipped.
//
// Usage:
//
//	kubeserver --etcd-dir DIR --etcd-client-port N --etcd-peer-port M [--etcd-log-file F] [--sa-key-file F] -- <kube-apiserver flags>
//
// etcd listens on 127.0.0.1 only. --sa-key-file, when the file does not exist yet, writes a
// fresh RSA key there (PKCS#1 PEM) for --service-account-key-file and
// --service-account-signing-key-file, so the harness needs no other crypto tool. The apiserver flags are passed through unchanged; the
// caller supplies --etcd-servers=http://127.0.0.1:N.
package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func loopbackURL(port int) url.URL {
	u, err := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	if err != nil {
		panic(err)
	}
	return *u
}

func ensureRSAKey(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	return os.WriteFile(path, pem.EncodeToMemory(block), 0o600)
}

func startEtcd(dir, logFile string, clientPort, peerPort int) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "kubeserver"
	cfg.Dir = dir
	client := loopbackURL(clientPort)
	peer := loopbackURL(peerPort)
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	if logFile != "" {
		cfg.LogOutputs = []string{logFile}
	}
	// Test data only: durability across power loss does not matter, speed does.
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd did not become ready within 60s")
	}
}

func main() {
	fs := flag.NewFlagSet("kubeserver", flag.ExitOnError)
	etcdDir := fs.String("etcd-dir", "", "etcd data directory (required)")
	clientPort := fs.Int("etcd-client-port", 0, "etcd client port on 127.0.0.1 (required)")
	peerPort := fs.Int("etcd-peer-port", 0, "etcd peer port on 127.0.0.1 (required)")
	etcdLog := fs.String("etcd-log-file", "", "write etcd's log here instead of stderr")
	saKey := fs.String("sa-key-file", "", "create an RSA key at this path if it does not exist")
	_ = fs.Parse(os.Args[1:]) // stops at "--"
	if *etcdDir == "" || *clientPort == 0 || *peerPort == 0 {
		fmt.Fprintln(os.Stderr, "kubeserver: --etcd-dir, --etcd-client-port and --etcd-peer-port are required")
		os.Exit(2)
	}

	if *saKey != "" {
		if err := ensureRSAKey(*saKey); err != nil {
			fmt.Fprintf(os.Stderr, "kubeserver: cannot write %s: %v\n", *saKey, err)
			os.Exit(1)
		}
	}

	e, err := startEtcd(*etcdDir, *etcdLog, *clientPort, *peerPort)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubeserver: etcd failed to start: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "kubeserver: etcd ready on 127.0.0.1:%d\n", *clientPort)
	go func() {
		if err := <-e.Err(); err != nil {
			fmt.Fprintf(os.Stderr, "kubeserver: etcd error: %v\n", err)
			os.Exit(1)
		}
	}()

	cmd := app.NewAPIServerCommand()
	cmd.SetArgs(fs.Args())
	code := cli.Run(cmd)
	e.Close()
	os.Exit(code)
}
