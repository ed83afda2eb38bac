%define ARCH 01

%ifndef COMPARE_TYPE
%define COMPARE_TYPE 2
%endif

%include "igzip_update_histogram.asm"
