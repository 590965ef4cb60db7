package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/rlctl/rlctl/internal/pgtest"
)

// issue makes a certificate signed by parent (self-signed when parent is
// nil) and returns it with its key.
func issue(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, ca bool, usage x509.ExtKeyUsage) (*x509.Certificate, *ecdsa.PrivateKey, []byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "rlctl test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: ca, BasicConstraintsValid: true}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// TestGRPCMutualTLS: with --grpc-tls-cert, --grpc-tls-key and
// --grpc-client-ca, a client with a certificate of that CA is answered; one
// without is refused at the handshake.
func TestGRPCMutualTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, caKey, caPEM, _ := issue(t, nil, nil, true, x509.ExtKeyUsageAny)
	_, _, srvPEM, srvKeyPEM := issue(t, ca, caKey, false, x509.ExtKeyUsageServerAuth)
	_, _, cliPEM, cliKeyPEM := issue(t, ca, caKey, false, x509.ExtKeyUsageClientAuth)
	for name, data := range map[string][]byte{"ca.pem": caPEM, "srv.pem": srvPEM, "srv.key": srvKeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dsn := pgtest.NewMigratedDatabase(t)
	addr := freeAddr(t)
	startServe(t, env(map[string]string{"DATABASE_URL": dsn}), "--grpc-addr", addr, "--grpc-trusted-clients", "127.0.0.0/8",
		"--grpc-tls-cert", filepath.Join(dir, "srv.pem"), "--grpc-tls-key", filepath.Join(dir, "srv.key"), "--grpc-client-ca", filepath.Join(dir, "ca.pem"))

	roots := x509.NewCertPool()
	roots.AddCert(ca)
	cliCert, err := tls.X509KeyPair(cliPEM, cliKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	req := &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: []*ratelimitv3.RateLimitDescriptor{{
		Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}}
	ask := func(cfg *tls.Config) error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			return err
		}
		defer conn.Close()
		_, err = rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(t.Context(), req)
		return err
	}
	if err := ask(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cliCert}}); err != nil {
		t.Errorf("with a client certificate of the CA: %v", err)
	}
	if err := ask(&tls.Config{RootCAs: roots}); err == nil {
		t.Error("without a client certificate: answered, want refused")
	}
}
