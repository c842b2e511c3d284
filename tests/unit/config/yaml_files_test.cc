// Every YAML file under deploy/ parses, and the deploy kit is consistent with
// itself and with neardup: embedded neardup configs pass the real config
// loader, Kubernetes objects reference each other by the right names, and
// compose mounts only files that exist.

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "config/config.h"

namespace {

namespace fs = std::filesystem;
const fs::path kDeploy = fs::path(NEARDUP_SOURCE_DIR) / "deploy";

std::vector<fs::path> yaml_files() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::recursive_directory_iterator(kDeploy)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".yml" || ext == ".yaml")) out.push_back(entry.path());
  }
  return out;
}

TEST(DeployYaml, EveryFileParses) {
  const auto files = yaml_files();
  ASSERT_GE(files.size(), 10u)
      << "deploy/ should hold the compose, prometheus, grafana and k8s files";
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    EXPECT_NO_THROW({
      const auto documents = YAML::LoadAllFromFile(file.string());
      EXPECT_FALSE(documents.empty());
    });
  }
}

TEST(DeployYaml, NeardupConfigsPassTheConfigLoader) {
  const auto configmap = YAML::LoadFile((kDeploy / "k8s/configmap.yaml").string());
  const auto text = configmap["data"]["neardup.yaml"].as<std::string>();
  const auto from_k8s =
      neardup::config::parse_config(text, "deploy/k8s/configmap.yaml#neardup.yaml");
  EXPECT_EQ(from_k8s.metrics.listen, "0.0.0.0:9464");
  const auto from_compose =
      neardup::config::load_config((kDeploy / "compose/neardup.yaml").string());
  EXPECT_EQ(from_compose.kafka.brokers.value_or(""), "kafka:9092");
  EXPECT_EQ(from_compose.metrics.listen, "0.0.0.0:9464");
}

TEST(DeployYaml, KubernetesObjectsReferenceEachOther) {
  const auto configmap = YAML::LoadFile((kDeploy / "k8s/configmap.yaml").string());
  const auto deployment = YAML::LoadFile((kDeploy / "k8s/statefulset.yaml").string());
  const auto service = YAML::LoadFile((kDeploy / "k8s/service.yaml").string());
  EXPECT_EQ(configmap["kind"].as<std::string>(), "ConfigMap");
  EXPECT_EQ(deployment["kind"].as<std::string>(), "StatefulSet");
  EXPECT_EQ(deployment["apiVersion"].as<std::string>(), "apps/v1");
  EXPECT_EQ(service["kind"].as<std::string>(), "Service");

  const auto spec = deployment["spec"];
  // Pods keep their names when recreated: each is a static group member
  // under its name (kafka.instance_id from the downward API).
  EXPECT_EQ(spec["serviceName"].as<std::string>(), service["metadata"]["name"].as<std::string>());
  EXPECT_EQ(spec["podManagementPolicy"].as<std::string>(), "Parallel");
  const auto labels = spec["template"]["metadata"]["labels"];
  for (const auto& kv : spec["selector"]["matchLabels"]) {
    EXPECT_EQ(labels[kv.first.as<std::string>()].as<std::string>(), kv.second.as<std::string>());
  }
  for (const auto& kv : service["spec"]["selector"]) {
    EXPECT_EQ(labels[kv.first.as<std::string>()].as<std::string>(), kv.second.as<std::string>());
  }
  const auto pod = spec["template"]["spec"];
  EXPECT_EQ(pod["volumes"][0]["configMap"]["name"].as<std::string>(),
            configmap["metadata"]["name"].as<std::string>());
  const auto container = pod["containers"][0];
  EXPECT_EQ(container["volumeMounts"][0]["mountPath"].as<std::string>(), "/etc/neardup");
  std::set<std::string> port_names;
  for (const auto& port : container["ports"]) port_names.insert(port["name"].as<std::string>());
  EXPECT_TRUE(port_names.count(service["spec"]["ports"][0]["targetPort"].as<std::string>()));
  EXPECT_EQ(container["livenessProbe"]["httpGet"]["path"].as<std::string>(), "/healthz");
  EXPECT_EQ(container["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/readyz");
  std::map<std::string, std::string> from_pod;
  for (const auto& var : container["env"]) {
    if (var["valueFrom"])
      from_pod[var["name"].as<std::string>()] =
          var["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>();
  }
  EXPECT_EQ(from_pod["NEARDUP_KAFKA_INSTANCE_ID"], "metadata.name");
  const auto args = container["args"].as<std::vector<std::string>>();
  EXPECT_EQ(args.back(), "/etc/neardup/neardup.yaml");
}

TEST(DeployYaml, ComposeHasTheStackAndMountsExistingFiles) {
  const auto compose = YAML::LoadFile((kDeploy / "docker-compose.yml").string());
  for (const char* name : {"kafka", "neardup", "prometheus", "grafana"}) {
    EXPECT_TRUE(compose["services"][name].IsMap()) << name;
  }
  EXPECT_NE(
      compose["services"]["kafka"]["environment"]["KAFKA_PROCESS_ROLES"].as<std::string>().find(
          "controller"),
      std::string::npos)
      << "Kafka must run in KRaft mode";
  for (const auto& service : compose["services"]) {
    for (const auto& volume : service.second["volumes"]) {
      const auto spec = volume.as<std::string>();
      if (spec.rfind("./", 0) != 0) continue;  // named volume
      const auto source = spec.substr(0, spec.find(':'));
      EXPECT_TRUE(fs::exists(kDeploy / source))
          << service.first.as<std::string>() << ": " << source;
    }
  }
  const auto build = compose["services"]["neardup"]["build"];
  EXPECT_TRUE(fs::exists(kDeploy / build["context"].as<std::string>() /
                         build["dockerfile"].as<std::string>()));
}

}  // namespace
