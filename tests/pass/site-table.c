// The site table and its registration: per module one private writable array
// of struct nano_site (48 bytes: id, kind, order, flags, size, line, column,
// reserved, function, file, module), one struct nano_site_module (ABI 2)
// pointing at it, with no origins when nothing was inlined from library code
// (tests/pass/inlined-at.cpp has them), a priority-101 constructor calling __nano_register_module when present,
// extern_weak hooks and the module flag "nano.atomics". Line and column come
// from the debug location; without debug info they are 0 and file is "".
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -O0 -g -S -emit-llvm -o - %s | FileCheck %s --check-prefixes=CHECK,DEBUG
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -O2 -g -S -emit-llvm -o - %s | FileCheck %s --check-prefixes=CHECK,DEBUG
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefixes=CHECK,NODEBUG
// RUN: env NANO_ATOMICS_INLINE=0 %clang_nano -O2 -S -emit-llvm -o - %s | FileCheck %s --check-prefixes=DECL

int counter;

// CHECK-DAG: %struct.nano_site = type { i32, i16, i8, i8, i32, i32, i32, i32, ptr, ptr, ptr }
// CHECK-DAG: %struct.nano_site_module = type { i32, i32, ptr, ptr, ptr, i64, ptr }
// DEBUG-DAG: @nano.sites = private global [2 x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 4, i32 [[@LINE+11]], i32 3, i32 0, ptr @[[BUMP:nano.str[.0-9]*]], ptr @[[FILE:nano.str[.0-9]*]], ptr @nano.module }, %struct.nano_site { i32 0, i16 0, i8 2, i8 0, i32 4, i32 [[@LINE+20]], i32 10, i32 0, ptr @[[PEEK:nano.str[.0-9]*]], ptr @[[FILE]], ptr @nano.module }], align 8
// NODEBUG-DAG: @nano.sites = private global [2 x %struct.nano_site] [%struct.nano_site { i32 0, i16 4, i8 0, i8 0, i32 4, i32 0, i32 0, i32 0, ptr @[[BUMP:nano.str[.0-9]*]], ptr @[[FILE:nano.str[.0-9]*]], ptr @nano.module }, %struct.nano_site { i32 0, i16 0, i8 2, i8 0, i32 4, i32 0, i32 0, i32 0, ptr @[[PEEK:nano.str[.0-9]*]], ptr @[[FILE]], ptr @nano.module }], align 8
// DEBUG-DAG: @nano.module = private global %struct.nano_site_module { i32 2, i32 2, ptr @nano.sites, ptr @[[FILE]], ptr null, i64 0, ptr null }, align 8
// NODEBUG-DAG: @nano.module = private global %struct.nano_site_module { i32 2, i32 2, ptr @nano.sites, ptr @[[NAME:nano.str[.0-9]*]], ptr null, i64 0, ptr null }, align 8
// CHECK-DAG: @[[BUMP]] = private unnamed_addr constant [5 x i8] c"bump\00", align 1
// CHECK-DAG: @[[PEEK]] = private unnamed_addr constant [5 x i8] c"peek\00", align 1
// DEBUG-DAG: @[[FILE]] = private unnamed_addr constant [{{[0-9]+}} x i8] c"{{/.*}}site-table.c\00", align 1
// NODEBUG-DAG: @[[FILE]] = private unnamed_addr constant [1 x i8] zeroinitializer, align 1
// NODEBUG-DAG: @[[NAME]] = private unnamed_addr constant [{{[0-9]+}} x i8] c"{{.*}}site-table.c\00", align 1
// CHECK-DAG: @llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 101, ptr @nano.module_ctor, ptr null }]
void bump(void) {
  __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
}

// CHECK-LABEL: define {{.*}}i32 @peek(
// CHECK: [[C:%.*]] = icmp ne ptr @__nano_atomic, null
// CHECK-NEXT: br i1 [[C]]
// CHECK: call void @__nano_atomic(ptr getelementptr inbounds ([2 x %struct.nano_site], ptr @nano.sites, i64 0, i64 1))
// CHECK: load atomic i32, ptr @counter acquire, align 4
int peek(void) {
  return __atomic_load_n(&counter, __ATOMIC_ACQUIRE);
}

// CHECK: define internal void @nano.module_ctor()
// CHECK: [[R:%.*]] = icmp ne ptr @__nano_register_module, null
// CHECK-NEXT: br i1 [[R]]
// CHECK: call void @__nano_register_module(ptr @nano.module)
// DECL-DAG: declare extern_weak void @__nano_atomic(ptr)
// DECL-DAG: declare extern_weak void @__nano_register_module(ptr)
// DECL-DAG: !{i32 7, !"nano.atomics", i32 1}
