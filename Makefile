# Convenience targets; each is one of the repository's scripts.
.PHONY: all demo test install vm-kernel vm-initramfs vm-test bench-compress bench-io

all: test

demo:            ## install what is needed, build, run the main job on the bundled sample
	scripts/demo.sh

test:            ## the test command CI runs
	scripts/test.sh

PREFIX ?= /usr/local
install:         ## peerpath (and ppgz) into $(PREFIX)/bin, its man pages (one a command) and bash/zsh/fish completions
	cargo build --release --locked -p peerpath-cli
	install -D -m 0755 target/release/peerpath $(DESTDIR)$(PREFIX)/bin/peerpath
	ln -sf peerpath $(DESTDIR)$(PREFIX)/bin/ppgz
	mkdir -p $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	target/release/peerpath man --dir $(DESTDIR)$(PREFIX)/share/man/man1
	target/release/peerpath completions bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/peerpath
	target/release/peerpath completions zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_peerpath
	target/release/peerpath completions fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/peerpath.fish

vm-kernel:       ## Linux 6.12 with PCI_P2PDMA from Debian's linux-source-6.12, cached outside the repo
	vm/build-kernel.sh

vm-initramfs:    ## busybox + static peerpath + p2ptest + guest init
	vm/build-initramfs.sh target/vm/initramfs.cpio.gz

vm-test:         ## boot every topology in vm/topologies/ and check (VM (QEMU TCG): function, not speed)
	vm/test.sh

bench-compress:  ## peerpath vs gzip, pigz, igzip, zstd on the corpus (scripts/fetch-corpus.sh first)
	cargo build --release --locked -p peerpath-cli && bench/compress.sh

bench-io:        ## peerpath bench-io vs fio
	cargo build --release --locked -p peerpath-cli && bench/io.sh
