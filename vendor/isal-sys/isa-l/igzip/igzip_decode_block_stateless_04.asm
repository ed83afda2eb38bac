%define ARCH 04
%define USE_HSWNI

%include "igzip_decode_block_stateless.asm"
