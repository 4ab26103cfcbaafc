package umad

import (
	"testing"

	"github.com/go-rdma/rdmacm/internal/leakcheck"
)

// TestMain fails the run if the tests leave file descriptors open.
func TestMain(m *testing.M) { leakcheck.Main(m) }
