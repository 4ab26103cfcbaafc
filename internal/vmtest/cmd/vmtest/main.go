// Command vmtest prepares and boots the soft-RoCE QEMU guests of the
// real-kernel test bed by hand (see docs/testing.md):
//
//	vmtest prepare [-arch A]            build or find the cached guest image; print its paths
//	vmtest pair [flags] [-a S] [-b S]   boot guests a and b; run script S in each (a after b
//	                                    has started it), print the output, shut down; with
//	                                    neither, keep them up until Ctrl-C
//	vmtest shell [flags]                boot one guest with a shell on this terminal
//	vmtest run SHARE GUEST SCRIPT       run SCRIPT in guest GUEST of a pair booted by
//	                                    `vmtest pair -share SHARE`; exit with its status
//	                                    (-timeout D before SHARE: kill it after D, default 2m)
//	vmtest start SHARE GUEST SCRIPT     start SCRIPT in the background there; print its job ID
//	vmtest stop SHARE GUEST ID          stop that job (SIGTERM), print its output
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-rdma/rdmacm/internal/vmtest"
	"github.com/go-rdma/rdmacm/internal/vmtest/agent"
)

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  vmtest prepare [-arch amd64|arm64]
  vmtest pair [-share DIR] [-nocm-a] [-nocm-b] [-arch-a A] [-arch-b A] [-accel kvm|tcg] [-debug] [-boot-timeout D] [-a SCRIPT] [-b SCRIPT] [-timeout D]
  vmtest shell [-share DIR] [-nocm] [-arch amd64|arm64] [-accel kvm|tcg] [-debug]
  vmtest run [-timeout D] SHARE GUEST SCRIPT   (default -timeout 2m)
  vmtest start SHARE GUEST SCRIPT
  vmtest stop SHARE GUEST ID`)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "prepare":
		err = prepare(ctx, os.Args[2:])
	case "pair":
		err = pair(ctx, os.Args[2:])
	case "shell":
		err = shell(ctx, os.Args[2:])
	case "run":
		os.Exit(run(ctx, os.Args[2:]))
	case "start":
		err = start(ctx, os.Args[2:])
	case "stop":
		err = stopJob(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func prepare(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("prepare", flag.ExitOnError)
	arch := fs.String("arch", vmtest.ArchAMD64, "guest architecture: amd64 or arm64")
	fs.Parse(args)
	start := time.Now()
	img, err := vmtest.Prepare(ctx, vmtest.PrepareOptions{Arch: *arch})
	if err != nil {
		return err
	}
	fmt.Printf("image %s (%s, %v)\nkernel %s (%s)\ninitrd %s\nmodules %s\n", img.Dir, img.ArchName(),
		time.Since(start).Round(time.Millisecond), img.Kernel, img.KernelRelease, img.Initrd, strings.Join(img.Modules, " "))
	return nil
}

func pair(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pair", flag.ExitOnError)
	share := fs.String("share", "", "host folder shared with the guests (default: a new temporary one, kept)")
	nocmA := fs.Bool("nocm-a", false, "boot guest a without ib_cm, iw_cm, rdma_cm, rdma_ucm")
	nocmB := fs.Bool("nocm-b", false, "boot guest b without ib_cm, iw_cm, rdma_cm, rdma_ucm")
	archA := fs.String("arch-a", vmtest.ArchAMD64, "guest a's architecture: amd64 or arm64")
	archB := fs.String("arch-b", vmtest.ArchAMD64, "guest b's architecture: amd64 or arm64 (arm64 with amd64 a: a mixed pair)")
	accel := fs.String("accel", "", "kvm or tcg (default: $VMTEST_ACCEL or probe)")
	debug := fs.Bool("debug", false, "kernel messages on the consoles")
	scriptA := fs.String("a", "", "shell script to run in guest a")
	scriptB := fs.String("b", "", "shell script to run in guest b (started first, in the background)")
	timeout := fs.Duration("timeout", 5*time.Minute, "timeout for the scripts")
	bootTimeout := fs.Duration("boot-timeout", vmtest.DefaultBootTimeout, "timeout for booting each guest")
	fs.Parse(args)
	opts := vmtest.PairOptions{Share: *share, Keep: true, Accel: *accel, Debug: *debug, BootTimeout: *bootTimeout,
		Lifetime: 8 * time.Hour, ArchA: *archA, ArchB: *archB}
	if *nocmA {
		opts.SkipModulesA = vmtest.CMModules()
	}
	if *nocmB {
		opts.SkipModulesB = vmtest.CMModules()
	}
	p, err := vmtest.BootPair(ctx, opts)
	if err != nil {
		return err
	}
	defer p.Close()
	fmt.Printf("share %s\nguests a %s, b %s\nconsoles %s %s\n", p.Share, p.A.Arch, p.B.Arch, p.A.ConsolePath(), p.B.ConsolePath())
	if *scriptA == "" && *scriptB == "" {
		fmt.Printf("guests up; run commands with: vmtest run %s a|b 'SCRIPT'; Ctrl-C shuts them down\n", p.Share)
		<-ctx.Done()
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var bp *agent.Process
	if *scriptB != "" {
		if bp, err = p.B.Start(rctx, *scriptB); err != nil {
			return err
		}
	}
	var errA error
	if *scriptA != "" {
		r, err := p.A.Run(rctx, *scriptA)
		errA = err
		if r != nil {
			fmt.Printf("=== a: %s (exit %d)\n%s%s", *scriptA, r.ExitCode, r.Stdout, r.Stderr)
		}
	}
	if bp != nil {
		r, err := bp.Wait(rctx)
		if r != nil {
			fmt.Printf("=== b: %s (exit %d)\n%s%s", *scriptB, r.ExitCode, r.Stdout, r.Stderr)
		}
		if err != nil && errA == nil {
			errA = err
		}
	}
	return errA
}

func shell(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("shell", flag.ExitOnError)
	share := fs.String("share", "", "host folder shared at /host (default: a new temporary one, kept)")
	nocm := fs.Bool("nocm", false, "boot without ib_cm, iw_cm, rdma_cm, rdma_ucm")
	arch := fs.String("arch", vmtest.ArchAMD64, "guest architecture: amd64 or arm64")
	accel := fs.String("accel", "", "kvm or tcg (default: $VMTEST_ACCEL or probe)")
	debug := fs.Bool("debug", false, "kernel messages on the console")
	fs.Parse(args)
	opts := vmtest.PairOptions{Share: *share, Keep: true, Accel: *accel, Debug: *debug, ArchA: *arch}
	if *nocm {
		opts.SkipModulesA = vmtest.CMModules()
	}
	return vmtest.Shell(ctx, opts)
}

func run(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	timeout := fs.Duration("timeout", agent.DefaultTimeout, "kill the script after this long")
	_ = fs.Parse(args)
	if fs.NArg() != 3 || *timeout <= 0 {
		usage()
	}
	args = fs.Args()
	m := vmtest.Attach(args[0], args[1])
	r, err := m.RunCmd(ctx, agent.Cmd{Script: args[2], Timeout: *timeout})
	if r == nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Print(r.Stdout)
	fmt.Fprint(os.Stderr, r.Stderr)
	switch {
	case r.Success():
		return 0
	case r.ExitCode > 0:
		return r.ExitCode
	}
	if r.TimedOut {
		fmt.Fprintf(os.Stderr, "vmtest run: killed after -timeout %v\n", *timeout)
		return 1
	}
	fmt.Fprintf(os.Stderr, "vmtest run: signal %q, error %q\n", r.Signal, r.Error)
	return 1
}

// backgroundTimeout bounds jobs started with `vmtest start`.
const backgroundTimeout = 4 * time.Hour

func start(ctx context.Context, args []string) error {
	if len(args) != 3 {
		usage()
	}
	m := vmtest.Attach(args[0], args[1])
	p, err := m.Agent().Start(ctx, agent.Cmd{Script: args[2], Timeout: backgroundTimeout})
	if err != nil {
		return err
	}
	fmt.Println(p.ID)
	return nil
}

func stopJob(ctx context.Context, args []string) error {
	if len(args) != 3 {
		usage()
	}
	m := vmtest.Attach(args[0], args[1])
	r, err := m.Agent().Attach(args[2], backgroundTimeout).Stop(ctx)
	if r != nil {
		fmt.Print(r.Stdout)
		fmt.Fprint(os.Stderr, r.Stderr)
	}
	return err
}
