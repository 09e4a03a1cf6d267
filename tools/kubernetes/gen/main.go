// Command gen writes the files deploy/kubernetes takes from elsewhere in the
// repository (package kubernetes says which, and why they are generated):
//
//	go -C tools run ./kubernetes/gen
package main

import (
	"fmt"
	"os"

	"github.com/payments-outbox/payments-outbox/tools/kubernetes"
)

func main() {
	const root = ".." // go -C tools runs in tools/
	files, err := kubernetes.Generate(root)
	if err == nil {
		err = kubernetes.Write(root, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubernetes/gen:", err)
		os.Exit(1)
	}
	for _, f := range files {
		fmt.Println("wrote", f.Path)
	}
}
