//go:build !linux

package kcall

func getScratch() *scratch { return nil }

func putScratch(*scratch) {}
