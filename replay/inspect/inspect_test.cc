// replay-inspect's show and diff on the kept capture of schema 1.5 (tests/data): the Report they
// return (what to print, whether diff found differences) or the Status of a call that could not run.
#include <string>

#include <gtest/gtest.h>

#include "dynrep/replay/inspect/inspect.h"

namespace dynrep::replay {
namespace {

const std::string kKept = std::string(DYNREP_SOURCE_DIR) + "/tests/data/capture-1.5/every-record.dynrep";

enum class Outcome { Sound, ProblemFound, DidNotRun };

struct Printed {
  Outcome outcome;
  std::string out, err;  // the report; the notes, or why it did not run
};

Printed printed(const Result<Report>& r) {
  if (!r.isOk()) return {Outcome::DidNotRun, "", r.status().message()};
  std::string notes;
  for (const ReportNote& n : r->notes) notes += n.text + "\n";
  return {r->problemFound ? Outcome::ProblemFound : Outcome::Sound, r->output, notes};
}

Printed show(const std::string& compileId, ShowSections sections, bool json = false) {
  return printed(inspectShow(kKept, compileId, sections, InspectOptions{json, false}));
}

Printed diff(const std::vector<std::string>& operands, bool json = false) {
  return printed(inspectDiff(operands, "", InspectOptions{json, false}));
}

TEST(InspectShow, AFailedCompileShowsItsFailureAndSymbols) {
  ShowSections shapes;
  shapes.shapes = true;
  Printed p = show("1/0", shapes);
  EXPECT_EQ(p.outcome, Outcome::Sound) << p.err;
  EXPECT_NE(p.out.find("compile 1/0: branches_on_data"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("Eq(u0, 0)"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("u0"), std::string::npos);
}

TEST(InspectShow, ARecompileShowsTheGuardThatFailed) {
  Printed p = show("0/1", ShowSections{}, /*json=*/true);
  EXPECT_EQ(p.outcome, Outcome::Sound) << p.err;
  EXPECT_NE(p.out.find("\"recompile_causes\""), std::string::npos);
  EXPECT_NE(p.out.find("L['x'].size()[0]"), std::string::npos) << p.out.substr(0, 2000);
}

TEST(InspectShow, AnUnknownCompileIsAnError) {
  Printed p = show("9/9", ShowSections{});
  EXPECT_EQ(p.outcome, Outcome::DidNotRun);
  EXPECT_NE(p.err.find("9/9"), std::string::npos) << p.err;
}

TEST(InspectDiff, TwoCompilesOfOneFunctionDifferInTheSize) {
  Printed p = diff({kKept, "0/0", "0/1"});
  EXPECT_EQ(p.outcome, Outcome::ProblemFound) << p.err;
  EXPECT_NE(p.out.find("L['x'].size()[0]: 4 -> dynamic"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("L['x'].size()[0] was 4, now dynamic"), std::string::npos) << p.out;
}

TEST(InspectDiff, ACompileAgainstItselfIsTheSame) {
  Printed p = diff({kKept, "0/1", "0/1"});
  EXPECT_EQ(p.outcome, Outcome::Sound) << p.out << p.err;
}

TEST(InspectDiff, AMissingStoreIsTrouble) {
  Printed p = diff({kKept + ".missing", "0/0", "0/1"});
  EXPECT_EQ(p.outcome, Outcome::DidNotRun);
  EXPECT_NE(p.err.find(".missing"), std::string::npos) << p.err;
}

}  // namespace
}  // namespace dynrep::replay
