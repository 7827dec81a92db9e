#include "core/error.hpp"

#include <cerrno>
#include <filesystem>
#include <new>

namespace sharelens {
namespace {

std::string filesystemHint(const std::error_code& code) {
  switch (code.value()) {
    case ELOOP:
      return "a symbolic link in the path points back at itself; fix or remove the link";
    case ENOTDIR:
      return "a part of the path is a file, not a directory; choose another path";
    case EACCES:
    case EPERM:
    case EROFS:
      return "the place is not writable (or readable) by this user; choose another directory";
    case ENOENT:
      return "check the path";
    case ENOSPC:
      return "the disk is full; free space or write elsewhere";
    case ENAMETOOLONG:
      return "shorten the path";
    default:
      return {};
  }
}

}  // namespace

std::string formatError(const ErrorDetails& d) {
  std::string out;
  if (!d.where.empty()) out += d.where + ": ";
  out += d.what;
  if (!d.expected.empty() || !d.found.empty()) {
    out += " (";
    if (!d.expected.empty()) out += "expected " + d.expected;
    if (!d.expected.empty() && !d.found.empty()) out += ", ";
    if (!d.found.empty()) out += "found " + d.found;
    out += ")";
  }
  if (!d.hint.empty()) out += ". Hint: " + d.hint;
  return out;
}

Error errorFromException(std::exception_ptr exception, bool* internal) {
  if (internal) *internal = false;
  try {
    std::rethrow_exception(exception);
  } catch (const Error& e) {
    return e;
  } catch (const std::filesystem::filesystem_error& e) {
    std::string where = e.path1().string();
    if (!e.path2().empty()) where += " -> " + e.path2().string();
    return Error({.what = e.code().message(),
                  .where = where.empty() ? "the file system" : where,
                  .hint = filesystemHint(e.code())});
  } catch (const std::bad_alloc&) {
    return Error(
        {.what = "out of memory",
         .where = "this machine",
         .hint = "the input asks for more memory than is available; use smaller sizes or a larger machine"});
  } catch (const std::length_error& e) {
    return Error({.what = "a size too large to allocate",
                  .where = "this machine",
                  .found = e.what(),
                  .hint = "the input asks for more memory than is available; use smaller sizes"});
  } catch (const std::exception& e) {
    if (internal) *internal = true;
    return Error({.what = "internal error: " + std::string(e.what()),
                  .hint = "this is a ShareLens bug; please report it with the command that caused it"});
  } catch (...) {
    if (internal) *internal = true;
    return Error({.what = "internal error: an unknown exception",
                  .hint = "this is a ShareLens bug; please report it"});
  }
}

Error::Error(ErrorDetails details)
    : std::runtime_error(formatError(details)), m_details(std::move(details)) {}

}  // namespace sharelens
