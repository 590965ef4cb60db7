package deploy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
)

// imageArchive is an image written by `buildah push … docker-archive:`,
// read into memory: its config and its files, layers applied in order.
type imageArchive struct {
	config struct {
		User         string
		Env          []string
		Entrypoint   []string
		Cmd          []string
		ExposedPorts map[string]struct{}
		Healthcheck  struct{ Test []string }
	}
	files map[string]*tar.Header
}

// readImageArchive reads archive and extracts the image's files into dir.
func readImageArchive(t *testing.T, archive, dir string) *imageArchive {
	t.Helper()
	blobs := map[string][]byte{}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			blobs[h.Name] = b
		}
	}
	blob := func(name string) []byte {
		b, ok := blobs[name]
		if !ok {
			t.Fatalf("the archive has no %s", name)
		}
		return b
	}
	var manifest []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(blob("manifest.json"), &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json: %v, %d images; want one", err, len(manifest))
	}
	img := &imageArchive{files: map[string]*tar.Header{}}
	var config struct{ Config json.RawMessage }
	if err := json.Unmarshal(blob(manifest[0].Config), &config); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(config.Config, &img.config); err != nil {
		t.Fatal(err)
	}
	for _, l := range manifest[0].Layers {
		b := blob(l)
		var r io.Reader = bytes.NewReader(b)
		if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b { // gzip
			zr, err := gzip.NewReader(r)
			if err != nil {
				t.Fatal(err)
			}
			r = zr
		}
		lr := tar.NewReader(r)
		for {
			h, err := lr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			name := path.Clean("/" + h.Name)
			img.files[name] = h
			target := filepath.Join(dir, name)
			switch h.Typeflag {
			case tar.TypeDir:
				if err := os.MkdirAll(target, 0o755); err != nil {
					t.Fatal(err)
				}
			case tar.TypeReg:
				if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(lr)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(target, b, os.FileMode(h.Mode)&0o755); err != nil {
					t.Fatal(err)
				}
			default:
				t.Errorf("the image holds %s, of tar type %c: want only files and directories", name, h.Typeflag)
			}
		}
	}
	return img
}

// TestImage builds the container image with scripts/image.sh (buildah,
// nothing downloaded) and checks what a runtime would use: an
// unprivileged user, rlapi serve as the command, a health check that needs
// no shell, a static binary and nothing else but the CA bundle and the
// user's passwd entry. Then it runs the image's own commands from the
// image's files, as the image's user, with the files owned by root (so
// nothing is writable: a read-only root): the migration a Job would run,
// then serve, until the health check passes, then SIGTERM.
func TestImage(t *testing.T) {
	if _, err := exec.LookPath("buildah"); err != nil {
		t.Fatal("buildah is missing: scripts/testdeps.sh installs Debian's buildah package")
	}
	if os.Geteuid() != 0 {
		t.Fatal("TestImage runs the image's files as its user through chroot, which needs root (make test runs as root in CI)")
	}
	tmp := t.TempDir()
	archive := filepath.Join(tmp, "rlapi.tar")
	store := filepath.Join(tmp, "storage")
	build := exec.Command("../scripts/image.sh", "rlapi:test")
	build.Env = append(os.Environ(), "BUILDER=buildah", "ARCHIVE="+archive,
		"BUILDAH_FLAGS=--root "+store+"/root --runroot "+store+"/run --storage-driver vfs")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
	root := filepath.Join(tmp, "rootfs")
	img := readImageArchive(t, archive, root)
	// Drop the image from buildah's storage (inside the temporary
	// directory) before the directory is removed.
	t.Cleanup(func() {
		_ = exec.Command("buildah", "--root", store+"/root", "--runroot", store+"/run", "--storage-driver", "vfs", "rmi", "--all", "--force").Run()
	})

	c := img.config
	if c.User != "65532:65532" {
		t.Errorf("User %q: want 65532:65532, not root", c.User)
	}
	if got := append(slices.Clone(c.Entrypoint), c.Cmd...); !slices.Equal(got, []string{"/usr/local/bin/rlapi", "serve"}) {
		t.Errorf("entrypoint and command %q: want rlapi serve", got)
	}
	if !slices.Equal(c.Healthcheck.Test, []string{"CMD", "/usr/local/bin/rlapi", "probe"}) {
		t.Fatalf("health check %q: want rlapi probe, run without a shell", c.Healthcheck.Test)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("exposed ports %v: want 8080/tcp", c.ExposedPorts)
	}
	var files []string
	for name, h := range img.files {
		if h.Typeflag == tar.TypeReg {
			files = append(files, name)
		}
	}
	slices.Sort(files)
	if want := []string{"/etc/group", "/etc/passwd", "/etc/ssl/certs/ca-certificates.crt", "/usr/local/bin/rlapi"}; !slices.Equal(files, want) {
		t.Errorf("files %q: want %q", files, want)
	}
	bin, err := elf.Open(filepath.Join(root, "usr/local/bin/rlapi"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range bin.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("rlapi in the image is dynamically linked: it would not start on an empty image")
		}
	}
	bin.Close()
	if b, err := os.ReadFile(filepath.Join(root, "etc/passwd")); err != nil || !strings.Contains(string(b), ":65532:65532:") {
		t.Errorf("/etc/passwd %q (%v): want an entry for 65532", b, err)
	}

	// Run the image's files as its user. The rootfs is owned by root
	// (extracted by this test), so the process can write nowhere.
	envs := append(slices.Clone(c.Env), "DATABASE_URL="+pgtest.NewDatabase(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	envs = append(envs, "RLAPI_ADDR="+addr) // the image's 0.0.0.0:8080, moved off a port in use
	inImage := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = envs
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
		return cmd
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if out, err := inImage(ctx, "/usr/local/bin/rlapi", "migrate").CombinedOutput(); err != nil {
		t.Fatalf("rlapi migrate in the image: %v\n%s", err, out)
	}
	serve := inImage(ctx, append(slices.Clone(c.Entrypoint), c.Cmd...)...)
	var stderr bytes.Buffer
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	var probe []byte
	for healthy := false; !healthy; {
		probe, err = inImage(ctx, c.Healthcheck.Test[1:]...).CombinedOutput()
		healthy = err == nil
		select {
		case err := <-exited:
			t.Fatalf("rlapi serve in the image exited: %v\n%s", err, stderr.String())
		case <-ctx.Done():
			t.Fatalf("the image's health check never passed: %s\n%s", probe, stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if !strings.Contains(string(probe), "ready") {
		t.Errorf("health check said %q: want ready", probe)
	}
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Errorf("after SIGTERM: %v, want exit status 0\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "read-only") || strings.Contains(stderr.String(), "permission denied") {
		t.Errorf("rlapi tried to write in the image:\n%s", stderr.String())
	}
}
