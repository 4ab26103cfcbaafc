//go:build linux

package umad

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-rdma/rdmacm/cm/engine"
	"github.com/go-rdma/rdmacm/internal/abi"
	"github.com/go-rdma/rdmacm/internal/vmtest/guest"
	"github.com/go-rdma/rdmacm/mad/sa"
	"github.com/go-rdma/rdmacm/rdma"
)

const saResponderEnv = "UMAD_SA_RESPONDER"

// The responder's answers, chosen by the last byte of the query's DGID.
const (
	dgidOne     = 0x01 // one record
	dgidTable   = 0x07 // tableRecords records: three RMPP segments
	dgidNone    = 0x99 // no records
	dgidLoseOne = 0x77 // the first query is not answered
	dgidSilent  = 0x55 // never answered
)

const tableRecords = 7

// TestGuestSAQuery runs the SA client over the real MAD layer: guest b
// runs TestSAResponderHelper, an SA registered on rxe's umad as the
// SubnAdm class's server (Get and GetTable, RMPP version 1), and guest a
// asks it for path records through OpenSA. RoCE has no LIDs, so the
// queries go to b's GID with a GRH instead of to an SM's LID; the rest is
// what an InfiniBand port does: QP 1, the GSI Q_Key, a MAD-layer timeout
// the answer is matched to, and the kernel's RMPP on both sides for a
// table answer of three segments. The GIDs are IPv6 ones: ib_mad matches
// an answer to its query by the GRH's destination GID, and over RoCE v2
// on IPv4 that place holds the IPv4 header, so no answer would match.
// It must run before TestGuestOversizedMAD (the files' order), which can
// leave guest a's GSI QP without receives.
func TestGuestSAQuery(t *testing.T) {
	guest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := guest.Peer().Start(ctx, fmt.Sprintf("%s=1 %s -test.run '^TestSAResponderHelper$' -test.v", saResponderEnv, exe))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		res, _ := srv.Stop(ctx)
		if res != nil {
			t.Logf("responder on %s:\n%s%s", guest.Peer().Name, res.Stdout, res.Stderr)
		}
	}()
	dev, err := FindDevice("rxe0", 1)
	if err != nil {
		t.Fatal(err)
	}
	addULA(t, ctx, guest.Local(), "fd00::1")
	addULA(t, ctx, guest.Peer(), "fd00::2")
	sgid, idx, err := LocalGID("rxe0", 1, netip.MustParseAddr("fd00::1"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenSA(dev, sa.ResolverConfig{Timeout: 300 * time.Millisecond, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	smGID := rdma.GIDFromAddr(netip.MustParseAddr("fd00::2"))
	sm := engine.Addr{GID: smGID, SGIDIndex: idx, HopLimit: 64}
	query := func(m sa.Method, last byte) ([]sa.PathRecord, error) {
		dgid := rdma.GID{0xfe, 0x80, 15: last}
		q := sa.CMQuery(sgid, dgid, 0xffff, 0x1000000000000000|uint64(last))
		q.Method = m
		return c.PathRecords(ctx, sm, q)
	}
	// The responder needs a moment to register; the first query resends
	// until it does.
	var got []sa.PathRecord
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err = query(sa.MethodGet, dgidOne)
		if err == nil || !errors.Is(err, rdma.ErrTimeout) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || len(got) != 1 {
		t.Fatalf("Get: %v, %d records", err, len(got))
	}
	if p := got[0]; p.SGID != sgid || p.DGID[15] != dgidOne || p.SLID != 0x11 || p.DLID != 0x22 || p.SL != 5 || p.MTU != rdma.MTU1024 {
		t.Errorf("Get answered %+v", p)
	}

	got, err = query(sa.MethodGetTable, dgidTable)
	if err != nil || len(got) != tableRecords {
		t.Fatalf("GetTable: %v, %d records, want %d", err, len(got), tableRecords)
	}
	for i, p := range got {
		if p.DLID != 0x22+uint16(i) || p.DGID[15] != dgidTable || p.SGID != sgid {
			t.Errorf("record %d of the table: %+v", i, p)
		}
	}

	if _, err = query(sa.MethodGet, dgidNone); !errors.Is(err, rdma.ErrNoRoute) {
		t.Errorf("no records: %v, want ErrNoRoute", err)
	}
	start := time.Now()
	if got, err = query(sa.MethodGet, dgidLoseOne); err != nil || len(got) != 1 {
		t.Errorf("after one lost query: %v, %d records", err, len(got))
	} else if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("answered after %v, before the resend was due", took)
	}
	start = time.Now()
	if _, err = query(sa.MethodGet, dgidSilent); !errors.Is(err, rdma.ErrTimeout) {
		t.Errorf("silent SA: %v, want ErrTimeout", err)
	} else if took := time.Since(start); took < 900*time.Millisecond {
		t.Errorf("gave up after %v, want three sends of 300 ms", took)
	}
	cctx, ccancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer ccancel()
	q := sa.CMQuery(sgid, rdma.GID{0xfe, 0x80, 15: dgidSilent}, 0xffff, 1)
	if _, err = c.PathRecords(cctx, sm, q); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("query past its context: %v", err)
	}
	if _, err := query(sa.MethodGet, dgidOne); err != nil {
		t.Errorf("Get after a cancelled query: %v", err)
	}
}

// addULA gives m's eth0 addr/64 unless it has it, and waits for rxe's
// RoCE v2 GID of it and for duplicate address detection.
func addULA(t *testing.T, ctx context.Context, m *guest.Machine, addr string) {
	t.Helper()
	gid := strings.ReplaceAll(addr, "::", ":0000:0000:0000:0000:0000:0000:000")
	r, err := m.Run(ctx, "ip -6 addr show dev eth0 | grep -q "+addr+"/ || ip -6 addr add "+addr+"/64 dev eth0; "+
		"for i in $(seq 50); do grep -qs '^"+gid+"$' /sys/class/infiniband/rxe0/ports/1/gids/* && "+
		"for j in $(seq 50); do ip -6 addr show dev eth0 | grep -q tentative || exit 0; sleep 0.1; done; sleep 0.1; done; exit 1")
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("guest %s: no RoCE GID for %s: %v %+v", m.Name, addr, err, r)
	}
}

// TestSAResponderHelper is the SA that TestGuestSAQuery queries, run on
// guest b. It answers for 90 s.
func TestSAResponderHelper(t *testing.T) {
	if os.Getenv(saResponderEnv) != "1" {
		t.Skip("helper for TestGuestSAQuery")
	}
	dev, err := FindDevice("rxe0", 1)
	if err != nil {
		t.Fatal(err)
	}
	req := abi.UmadRegReq2{QPN: 1, MgmtClass: sa.MgmtClass, MgmtClassVersion: sa.ClassVersion, RMPPVersion: 1}
	req.MethodMask[0] = 1<<uint(sa.MethodGet) | 1<<uint(sa.MethodGetTable)
	p, err := openAgent(dev, &req)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	lost := map[uint64]bool{}
	buf := make([]byte, 256)
	for {
		from, n, err := p.Recv(ctx, buf)
		var se *SendError
		if errors.As(err, &se) {
			fmt.Printf("a send came back: %v\n", err)
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				t.Error(err)
			}
			return
		}
		v, err := sa.ParseQuery(buf[:n])
		if err != nil {
			t.Logf("not a query: %v", err)
			continue
		}
		var q sa.Query
		v.Decode(&q)
		last := q.Record.DGID[15]
		if last == dgidSilent || last == dgidLoseOne && !lost[q.TransactionID] {
			lost[q.TransactionID] = true
			continue
		}
		m := answer(t, q)
		from.QPN = 1
		if err := writeMAD(p, from, m); err != nil {
			t.Error(err)
			return
		}
		fmt.Printf("answered %v for DGID ...%02x: %d bytes\n", q.Method, last, len(m))
	}
}

// answer builds the responder's answer to q; a table answer longer than
// one MAD is the headers once and then every record, as the kernel's
// RMPP sends it in segments.
func answer(t *testing.T, q sa.Query) []byte {
	rec := func(i int) sa.PathRecord {
		return sa.PathRecord{ServiceID: q.Record.ServiceID, PathRecord: rdma.PathRecord{
			SGID: q.Record.SGID, DGID: q.Record.DGID, SLID: 0x11, DLID: 0x22 + uint16(i), SL: 5,
			PKey: 0xffff, MTU: rdma.MTU1024, Rate: 3, PacketLifeTime: 14, Reversible: true}}
	}
	r := sa.Response{TransactionID: q.TransactionID, Method: sa.MethodGetResp}
	n := 1
	switch {
	case q.Record.DGID[15] == dgidNone:
		r.Status, n = sa.StatusNoRecords<<8, 0
	case q.Method == sa.MethodGetTable:
		r.Method, n = sa.MethodGetTableResp, tableRecords
	}
	out := make([]byte, sa.HeaderSize+max(n*sa.PathRecordSize, sa.DataSize))
	for i := 0; i < n || i == 0; i += sa.MaxRecords {
		r.Records = r.Records[:0]
		for k := i; k < min(n, i+sa.MaxRecords); k++ {
			r.Records = append(r.Records, rec(k))
		}
		var m [sa.MADSize]byte
		if _, err := r.MarshalTo(m[:]); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			copy(out, m[:])
		} else {
			copy(out[sa.HeaderSize+i*sa.PathRecordSize:], m[sa.HeaderSize:sa.HeaderSize+len(r.Records)*sa.PathRecordSize])
		}
	}
	if r.Method == sa.MethodGetTableResp {
		out = out[:sa.HeaderSize+n*sa.PathRecordSize]
	}
	return out
}

// writeMAD sends a MAD of any length from p's agent to to, without a
// MAD-layer timeout: with one, an RMPP answer's last ACK would leave it
// waiting for a response of its own.
func writeMAD(p *Port, to engine.Addr, m []byte) error {
	h := sendHeader(p.agent, to)
	binary.BigEndian.PutUint32(h.QKey[:], sa.GSIQKey)
	if err := p.write(append(append([]byte(nil), abi.Bytes(&h)...), m...)); err != nil {
		return fmt.Errorf("send %d-byte answer: %w", len(m), err)
	}
	return nil
}
