package hwtest

// The guest test (guest_test.go) runs the commands from testdata/bin: the
// guests have no Go toolchain. make vmtest runs this before vmexec.
//go:generate env CGO_ENABLED=0 go build -trimpath -o testdata/bin/ ../../cmd/verbs-pingpong ../../cmd/rdmacm-ping
