// SPDX-License-Identifier: Apache-2.0
// The /proc parsers capture relies on, on text copied from a 6.18 kernel.
#include <sys/resource.h>

#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "cxlpool/ckpt/proc_text.hpp"
#include "cxlpool/ckpt/socket_text.hpp"

namespace cxlpool::ckpt {
namespace {

constexpr const char* kSmaps =
    "55d1c8a00000-55d1c8a02000 r--p 00000000 08:01 1572887                    /usr/bin/sleep\n"
    "Size:                  8 kB\n"
    "Rss:                   8 kB\n"
    "VmFlags: rd mr mw me sd \n"
    "7f2f009f7000-7f2f009fe000 r--s 00000000 08:01 1837                       /usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache\n"
    "VmFlags: rd mr me ms sd \n"
    "7f2f00a00000-7f2f00a01000 rw-p 00000000 00:00 0 \n"
    "VmFlags: rd wr mr mw me ac sd dc hg \n"
    "7f2f00b00000-7f2f00b01000 rw-p 00000000 00:01 77                         /memfd:my region (deleted)\n"
    "VmFlags: rd wr mr mw me sd \n"
    "7fffd6f08000-7fffd6f29000 rw-p 00000000 00:00 0                          [stack]\n"
    "VmFlags: rd wr mr mw me gd ac \n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n"
    "VmFlags: ex \n";

TEST(CkptProcText, Smaps) {
  auto e = parse_smaps(kSmaps);
  ASSERT_TRUE(e) << e.error().message;
  ASSERT_EQ(e->size(), 6u);
  EXPECT_EQ((*e)[0].start, 0x55d1c8a00000u);
  EXPECT_EQ((*e)[0].end, 0x55d1c8a02000u);
  EXPECT_EQ((*e)[0].perms, "r--p");
  EXPECT_EQ((*e)[0].inode, 1572887u);
  EXPECT_EQ((*e)[0].path, "/usr/bin/sleep");
  EXPECT_TRUE((*e)[0].has_flag("mw"));
  EXPECT_FALSE((*e)[1].has_flag("mw"));
  EXPECT_EQ((*e)[2].path, "");
  EXPECT_TRUE((*e)[2].has_flag("dc"));
  EXPECT_TRUE((*e)[2].has_flag("hg"));
  EXPECT_EQ((*e)[3].path, "/memfd:my region (deleted)");
  EXPECT_EQ((*e)[4].path, "[stack]");
  EXPECT_TRUE((*e)[4].has_flag("gd"));
  EXPECT_EQ((*e)[5].start, 0xffffffffff600000u);
}

TEST(CkptProcText, MapsWithoutFlagsAndRejections) {
  auto e = parse_smaps("00400000-00401000 r-xp 00000000 08:01 12 /bin/x\n");
  ASSERT_TRUE(e);
  ASSERT_EQ(e->size(), 1u);
  EXPECT_TRUE((*e)[0].vm_flags.empty());
  EXPECT_FALSE(parse_smaps("garbage\n"));
  EXPECT_FALSE(parse_smaps("Size: 4 kB\n")) << "a key before any VMA";
  EXPECT_FALSE(parse_smaps("00400000-zz r-xp 00000000 08:01 12 /bin/x\n"));
}

constexpr const char* kStatus =
    "Name:\tckpt_target\n"
    "Umask:\t0027\n"
    "State:\tS (sleeping)\n"
    "Uid:\t1000\t1001\t1002\t1003\n"
    "Gid:\t100\t101\t102\t103\n"
    "Groups:\t4 24 27 \n"
    "NoNewPrivs:\t1\n"
    "Seccomp:\t0\n"
    "CapInh:\t0000000000000000\n"
    "CapPrm:\t000001ffffffffff\n"
    "CapEff:\t000001ffffffffff\n"
    "CapBnd:\t000001ffffffffff\n"
    "CapAmb:\t0000000000000001\n";

TEST(CkptProcText, Status) {
  auto s = parse_status(kStatus);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->state, 'S');
  EXPECT_TRUE(s->has_umask);
  EXPECT_EQ(s->umask, 027u);
  EXPECT_EQ(s->uid[0], 1000u);
  EXPECT_EQ(s->uid[2], 1002u);
  EXPECT_EQ(s->gid[1], 101u);
  EXPECT_EQ(s->groups, (std::vector<uint32_t>{4, 24, 27}));
  EXPECT_EQ(s->cap_permitted, 0x1ffffffffffu);
  EXPECT_EQ(s->cap_ambient, 1u);
  EXPECT_EQ(s->no_new_privs, 1u);
  EXPECT_EQ(s->seccomp, 0u);
  EXPECT_FALSE(parse_status("Name:\tx\nUid:\t0\t0\t0\t0\n")) << "no Gid or capabilities";
}

TEST(CkptProcText, StatMmFields) {
  // comm with a space and a parenthesis; fields 26-28 and 45-51 set apart.
  std::string stat = "1234 (a) b) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 555 1000000 200";
  // fields 24 .. 52
  const char* rest[] = {"18446744073709551615", "4096", "8192", "140737488347136", "0", "0", "0", "0", "0", "0", "0",
                        "0", "0", "17", "3", "0", "0", "0", "0", "0", "12288", "16384", "20480", "24576", "28672",
                        "32768", "36864", "0"};
  for (const char* r : rest) stat += std::string(" ") + r;
  auto m = parse_stat_mm(stat);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->start_code, 4096u);
  EXPECT_EQ(m->end_code, 8192u);
  EXPECT_EQ(m->start_stack, 140737488347136u);
  EXPECT_EQ(m->start_data, 12288u);
  EXPECT_EQ(m->end_data, 16384u);
  EXPECT_EQ(m->start_brk, 20480u);
  EXPECT_EQ(m->arg_start, 24576u);
  EXPECT_EQ(m->arg_end, 28672u);
  EXPECT_EQ(m->env_start, 32768u);
  EXPECT_EQ(m->env_end, 36864u);
  EXPECT_FALSE(parse_stat_mm("1234 (x) S 1 2 3"));
  EXPECT_FALSE(parse_stat_mm("no comm"));
}

TEST(CkptProcText, Limits) {
  const std::string text =
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max cpu time              unlimited            unlimited            seconds   \n"
      "Max file size             4096                 unlimited            bytes     \n"
      "Max open files            1024                 524288               files     \n";
  auto l = parse_limits(text, 3);
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ((*l)[0][0], ~0ull);
  EXPECT_EQ((*l)[1][0], 4096u);
  EXPECT_EQ((*l)[1][1], ~0ull);
  EXPECT_EQ((*l)[2][1], 524288u);
  EXPECT_EQ(parse_limits(text, 4).error().code, EIO);
  EXPECT_EQ(parse_limits("Limit\nMax cpu time              lots                 unlimited            s\n", 1)
                .error()
                .code,
            EIO);
  // This process's own limits, as the kernel prints them.
  std::ifstream in("/proc/self/limits");
  const std::string own((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto mine = parse_limits(own, 16);
  ASSERT_TRUE(mine) << mine.error().message;
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  EXPECT_EQ((*mine)[RLIMIT_NOFILE][0], files.rlim_cur);
  EXPECT_EQ((*mine)[RLIMIT_NOFILE][1], files.rlim_max);
}

TEST(CkptProcText, Fdinfo) {
  auto f = parse_fdinfo("pos:\t10\nflags:\t02100000\nmnt_id:\t25\nino:\t99\n");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->pos, 10u);
  EXPECT_EQ(f->flags, 02100000u);
  EXPECT_FALSE(parse_fdinfo("pos:\t10\n"));
  EXPECT_FALSE(f->has_eventfd_count);
  EXPECT_FALSE(f->has_eventfd_semaphore);
}

TEST(CkptProcText, FdinfoOfAnEventfd) {
  // As Linux 6.x writes it: the count in hex, padded; id and semaphore in decimal.
  auto f = parse_fdinfo("pos:\t0\nflags:\t02004002\nmnt_id:\t17\nino:\t1038\n"
                        "eventfd-count:               1a\neventfd-id: 5\neventfd-semaphore: 1\n");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->flags, 02004002u);
  EXPECT_TRUE(f->has_eventfd_count && f->has_eventfd_id && f->has_eventfd_semaphore);
  EXPECT_EQ(f->eventfd_count, 0x1au);
  EXPECT_EQ(f->eventfd_id, 5u);
  EXPECT_TRUE(f->eventfd_semaphore);
  // A kernel before eventfd-semaphore: the rest is there, the flag unknown.
  auto old = parse_fdinfo("pos:\t0\nflags:\t02\neventfd-count:                0\neventfd-id: 9\n");
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_TRUE(old->has_eventfd_count);
  EXPECT_FALSE(old->has_eventfd_semaphore);
  EXPECT_EQ(old->eventfd_count, 0u);
  auto bad = parse_fdinfo("pos:\t0\nflags:\t02\neventfd-count: zz\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, EIO);
  EXPECT_FALSE(parse_fdinfo("pos:\t0\nflags:\t02\neventfd-semaphore: 2\n"));
}

TEST(CkptProcText, NetUnix) {
  const auto rows = parse_net_unix(
      "Num       RefCount Protocol Flags    Type St Inode Path\n"
      "0000000000000000: 00000002 00000000 00010000 0001 01 1349 /run/nvidia-persistenced/socket\n"
      "0000000000000000: 00000003 00000000 00000000 0001 03 1350\n"
      "0000000000000000: 00000002 00000000 00000000 0005 03 1351 @cuda uvm name\n"
      "garbage line\n");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].inode, 1349u);
  EXPECT_TRUE(rows[0].listening);
  EXPECT_EQ(rows[0].path, "/run/nvidia-persistenced/socket");
  EXPECT_EQ(rows[1].state, 3u);
  EXPECT_EQ(rows[1].type, 1u);
  EXPECT_TRUE(rows[1].path.empty());
  EXPECT_FALSE(rows[1].listening);
  EXPECT_EQ(rows[2].type, 5u);
  EXPECT_EQ(rows[2].path, "@cuda uvm name");
  EXPECT_EQ(socket_type_name(rows[2].type), "seqpacket");
}

TEST(CkptProcText, NetNetlink) {
  const auto rows = parse_net_netlink(
      "sk               Eth Pid        Groups   Rmem     Wmem     Dump  Locks    Drops    Inode\n"
      "ffff8f0a4e0d1800 15  1102       00000001 0        0        0     2        0        1349\n");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].protocol, 15u);
  EXPECT_EQ(rows[0].portid, 1102u);
  EXPECT_EQ(rows[0].inode, 1349u);
}

TEST(CkptProcText, NetInet) {
  const auto v4 = parse_net_inet(
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0 100 0 0 10 0\n",
      false);
  ASSERT_EQ(v4.size(), 1u);
  EXPECT_EQ(v4[0].local, "127.0.0.1:8080");
  EXPECT_EQ(v4[0].remote, "0.0.0.0:0");
  EXPECT_EQ(v4[0].state, 10u);
  EXPECT_EQ(v4[0].inode, 4242u);
  const auto v6 = parse_net_inet(
      "  sl  local_address                         remote_address                        st tx_queue rx_queue tr "
      "tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000000000000000000001000000:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000 "
      "00:00000000 00000000     0        0 77 1 0 100 0 0 10 0\n",
      true);
  ASSERT_EQ(v6.size(), 1u);
  EXPECT_EQ(v6[0].local, "[0:0:0:0:0:0:0:1]:443");
  EXPECT_EQ(v6[0].inode, 77u);
}

}  // namespace
}  // namespace cxlpool::ckpt
