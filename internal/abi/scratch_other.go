//go:build !linux

package abi

func getScratch() *scratch { return nil }

func putScratch(*scratch) {}
