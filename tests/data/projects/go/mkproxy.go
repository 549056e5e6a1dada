// Command mkproxy writes a GOPROXY directory (for GOPROXY=file://OUT) that serves the module in
// SRC (its go.mod and .go files) as version v1.0.0: mkproxy SRC OUT.
package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"regexp"
)

func main() {
	src, out := os.Args[1], os.Args[2]
	mod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	check(err)
	path := regexp.MustCompile(`(?m)^module (\S+)`).FindSubmatch(mod)[1]
	dir := filepath.Join(out, string(path), "@v")
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, "list"), []byte("v1.0.0\n"), 0o644))
	check(os.WriteFile(filepath.Join(dir, "v1.0.0.info"), []byte(`{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`), 0o644))
	check(os.WriteFile(filepath.Join(dir, "v1.0.0.mod"), mod, 0o644))
	f, err := os.Create(filepath.Join(dir, "v1.0.0.zip"))
	check(err)
	z := zip.NewWriter(f)
	names, err := filepath.Glob(filepath.Join(src, "*"))
	check(err)
	for _, name := range names {
		body, err := os.ReadFile(name)
		check(err)
		w, err := z.Create(string(path) + "@v1.0.0/" + filepath.Base(name))
		check(err)
		_, err = w.Write(body)
		check(err)
	}
	check(z.Close())
	check(f.Close())
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
