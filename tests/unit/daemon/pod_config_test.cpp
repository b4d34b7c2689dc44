// SPDX-License-Identifier: Apache-2.0
// [pod]: defaults, every key read, every rejection naming its key and line,
// restart-only keys, and the example file and the documentation covering
// every key.
#include <gtest/gtest.h>

#include "config.hpp"
#include "config_test_support.hpp"

namespace cxlpool::daemon {
namespace {

constexpr const char* kSource = "pod.toml";

Result<Config> parse(const std::string& text) { return parse_config(text, kSource); }

const std::vector<std::string> kPodKeys = {"state",           "name",     "host",    "etcd_endpoints", "lease_ttl_s",
                                           "etcd_timeout_ms", "provider", "address", "rails",          "shm",
                                           "replica_num",     "secret_file",     "etcd_user", "etcd_password_file"};

constexpr const char* kEveryKey = R"([pod]
state = "etcd"
name = "rack-7"
host = "node-3.a"
etcd_endpoints = ["http://10.0.0.9:2379", "http://etcd-b:2379", "http://[fd00::1]:2379"]
lease_ttl_s = 4
etcd_timeout_ms = 300
provider = "shm"
address = "10.0.0.3:7100"
rails = ["10.0.0.3", "fd00::3"]
shm = false
replica_num = 3
secret_file = "/etc/cxlpool/pod.key"
etcd_user = "cxlpool-node-3"
etcd_password_file = "/etc/cxlpool/etcd.pw"
)";

TEST(PodConfig, Defaults) {
  auto config = parse("");
  ASSERT_TRUE(config) << config.error().message;
  const PodSection& p = config->pod;
  EXPECT_EQ(p.state, PodStateKind::kEmbedded);
  EXPECT_EQ(p.name, "default");
  EXPECT_TRUE(p.host.empty());
  EXPECT_TRUE(p.etcd_endpoints.empty());
  EXPECT_EQ(p.lease_ttl_s, 10u);
  EXPECT_EQ(p.etcd_timeout_ms, 1000u);
  EXPECT_EQ(p.provider, "tcp;ofi_rxm");
  EXPECT_TRUE(p.address.empty());
  EXPECT_TRUE(p.rails.empty());
  EXPECT_TRUE(p.shm);
  EXPECT_EQ(p.replica_num, 1u);
  EXPECT_TRUE(p.secret_file.empty());
  EXPECT_TRUE(p.etcd_user.empty());
  EXPECT_TRUE(p.etcd_password_file.empty());
}

TEST(PodConfig, EveryKeyIsRead) {
  auto config = parse(kEveryKey);
  ASSERT_TRUE(config) << config.error().message;
  const PodSection& p = config->pod;
  EXPECT_EQ(p.state, PodStateKind::kEtcd);
  EXPECT_EQ(p.name, "rack-7");
  EXPECT_EQ(p.host, "node-3.a");
  EXPECT_EQ(p.etcd_endpoints,
            (std::vector<std::string>{"http://10.0.0.9:2379", "http://etcd-b:2379", "http://[fd00::1]:2379"}));
  EXPECT_EQ(p.lease_ttl_s, 4u);
  EXPECT_EQ(p.etcd_timeout_ms, 300u);
  EXPECT_EQ(p.provider, "shm");
  EXPECT_EQ(p.address, "10.0.0.3:7100");
  EXPECT_EQ(p.rails, (std::vector<std::string>{"10.0.0.3", "fd00::3"}));
  EXPECT_FALSE(p.shm);
  EXPECT_EQ(p.replica_num, 3u);
  EXPECT_EQ(p.secret_file, "/etc/cxlpool/pod.key");
  EXPECT_EQ(p.etcd_user, "cxlpool-node-3");
  EXPECT_EQ(p.etcd_password_file, "/etc/cxlpool/etcd.pw");
  for (const std::string& key : kPodKeys) {
    EXPECT_NE(std::string(kEveryKey).find("\n" + key + " = "), std::string::npos) << key;
  }
}

TEST(PodConfig, Rejections) {
  for (const Rejection& r : {
           Rejection{"[pod]\nstate = \"zookeeper\"\n", "pod.state", 2, "must be one of"},
           Rejection{"[pod]\nstate = \"etcd\"\n", "pod.etcd_endpoints", 1, "needs at least one endpoint"},
           Rejection{"[pod]\nname = \"\"\n", "pod.name", 2, "1..64 bytes"},
           Rejection{"[pod]\nname = \"a/b\"\n", "pod.name", 2, "1..64 bytes"},
           Rejection{"[pod]\nname = \".hidden\"\n", "pod.name", 2, "not starting with '.'"},
           Rejection{"[pod]\nhost = \"has space\"\n", "pod.host", 2, "1..64 bytes"},
           Rejection{"[pod]\netcd_endpoints = [\"10.0.0.9:2379\"]\n", "pod.etcd_endpoints", 2, "http://HOST:PORT"},
           Rejection{"[pod]\netcd_endpoints = [\"https://e:2379\"]\n", "pod.etcd_endpoints", 2, "http://HOST:PORT"},
           Rejection{"[pod]\netcd_endpoints = [\"http://e:0\"]\n", "pod.etcd_endpoints", 2, "http://HOST:PORT"},
           Rejection{"[pod]\netcd_endpoints = [\"http://e:70000\"]\n", "pod.etcd_endpoints", 2, "http://HOST:PORT"},
           Rejection{"[pod]\netcd_endpoints = [\"http://e/x:2379\"]\n", "pod.etcd_endpoints", 2, "http://HOST:PORT"},
           Rejection{"[pod]\netcd_endpoints = \"http://e:2379\"\n", "pod.etcd_endpoints", 2, "array of strings"},
           Rejection{"[pod]\nlease_ttl_s = 1\n", "pod.lease_ttl_s", 2, "between"},
           Rejection{"[pod]\netcd_timeout_ms = 10\n", "pod.etcd_timeout_ms", 2, "between"},
           Rejection{"[pod]\nprovider = \"udp\"\n", "pod.provider", 2, "must be one of"},
           Rejection{"[pod]\naddress = \"10.0.0.3\"\n", "pod.address", 2, "HOST:PORT"},
           Rejection{"[pod]\nttl = 3\n", "pod.ttl", 2, "unknown key"},
           Rejection{"[pod]\nrails = [\"eth0\"]\n", "pod.rails", 2, "not an IPv4 or IPv6 address"},
           Rejection{"[pod]\nrails = [\"10.0.0.1:7000\"]\n", "pod.rails", 2, "not an IPv4 or IPv6 address"},
           Rejection{"[pod]\nrails = [\"1.1.1.1\", \"1.1.1.2\", \"1.1.1.3\", \"1.1.1.4\", \"1.1.1.5\", \"1.1.1.6\", \"1.1.1.7\", \"1.1.1.8\", \"1.1.1.9\"]\n", "pod.rails", 2, "at most 8"},
           Rejection{"[pod]\nshm = 1\n", "pod.shm", 2, "boolean"},
           Rejection{"[pod]\nreplica_num = 0\n", "pod.replica_num", 2, "between"},
           Rejection{"[pod]\nreplica_num = 9\n", "pod.replica_num", 2, "between"},
           Rejection{"[pod]\nreplica_num = \"2\"\n", "pod.replica_num", 2, "integer"},
           Rejection{"[pod]\nsecret_file = \"pod.key\"\n", "pod.secret_file", 2, "absolute path"},
           Rejection{"[pod]\nsecret_file = 7\n", "pod.secret_file", 2, "string"},
           Rejection{"[pod]\netcd_user = \"a b\"\netcd_password_file = \"/p\"\n", "pod.etcd_user", 2, "printable"},
           Rejection{"[pod]\netcd_user = \"u\"\netcd_password_file = \"p\"\n", "pod.etcd_password_file", 3, "absolute path"},
           Rejection{"[pod]\netcd_user = \"u\"\n", "pod.etcd_password_file", 1, "give the file of its password"},
           Rejection{"[pod]\netcd_password_file = \"/p\"\n", "pod.etcd_user", 1, "give the user"},
       }) {
    SCOPED_TRACE(r.text);
    expect_rejection(r, kSource);
  }
}

TEST(PodConfig, NamesFollowOneRule) {
  EXPECT_TRUE(valid_pod_name("a"));
  EXPECT_TRUE(valid_pod_name(std::string(64, 'x')));
  EXPECT_FALSE(valid_pod_name(std::string(65, 'x')));
  EXPECT_FALSE(valid_pod_name(""));
  EXPECT_FALSE(valid_pod_name(".."));
  EXPECT_FALSE(valid_pod_name("a/b"));
  EXPECT_FALSE(valid_pod_name("a\nb"));
}

TEST(PodConfig, EveryKeyNeedsARestart) {
  auto running = parse("");
  auto next = parse(kEveryKey);
  ASSERT_TRUE(running && next);
  expect_keys_need_restart("pod", kPodKeys, *running, *next);
}

TEST(PodConfig, ExampleAndDocumentationShowEveryKey) { expect_example_and_doc_show("pod", kPodKeys); }

}  // namespace
}  // namespace cxlpool::daemon
