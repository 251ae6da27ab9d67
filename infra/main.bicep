// asyncresponse-functions on Azure: one resource group holding
//   - a user-assigned managed identity (the app's only credential)            modules/identity.bicep
//   - host storage + the deployment package container, identity access only   modules/storage.bicep
//   - Log Analytics + Application Insights                                    modules/monitoring.bicep
//   - Azure SQL server (Entra-only auth) + serverless database + firewall     modules/sql.bicep
//   - Key Vault holding CALLBACK_SIGNING_SECRET                               modules/keyvault.bicep
//   - Flex Consumption plan + function app (Node 22) + app settings           modules/function-app.bicep
//   - workbook, log alerts, optional e-mail action group                      modules/observability.bicep
//
// Deploy with infra/deploy.sh, which also grants the identity its database user (infra/sql/grant-app-identity.sql),
// creates the schema (npm run schema -- apply) and publishes the code. Step by step: docs/azure.md.
// No secret is stored in any setting: SQL uses Entra (AZURE_CLIENT_ID), storage uses the identity, the callback
// signing secret is a Key Vault reference.

targetScope = 'resourceGroup'

// ----------------------------------------------------------------------------------------------------------
// Naming and placement
// ----------------------------------------------------------------------------------------------------------

@description('Azure region for every resource; it must offer Flex Consumption (az functionapp list-flexconsumption-locations).')
param location string = resourceGroup().location

@description('Short prefix of the resource names: lowercase letters and digits.')
@minLength(2)
@maxLength(10)
param namePrefix string = 'asyncresp'

@description('Tags for every resource.')
param tags object = {}

// ----------------------------------------------------------------------------------------------------------
// Azure SQL
// ----------------------------------------------------------------------------------------------------------

@description('Entra admin of the SQL server: a user principal name, a group name or an app name. The deployer must be this principal (or in this group) to run the grant and schema steps.')
param sqlAdminLogin string

@description('Object id of that Entra principal (az ad signed-in-user show --query id -o tsv for yourself).')
param sqlAdminObjectId string

@description('Kind of the Entra admin.')
@allowed([
  'User'
  'Group'
  'Application'
])
param sqlAdminPrincipalType string = 'User'

@description('Whether the SQL server already exists (infra/deploy.sh checks). Azure honours the server\'s Entra admin property only at creation, so on an existing server the admin and Entra-only authentication are set through child resources instead (modules/sql.bicep).')
param sqlServerExists bool

@description('Database name.')
param databaseName string = 'asyncresponse'

@description('Database SKU name (GP_S_Gen5 = General Purpose serverless).')
param databaseSkuName string = 'GP_S_Gen5'

@description('Database SKU tier.')
param databaseSkuTier string = 'GeneralPurpose'

@description('Database hardware family (empty for DTU SKUs).')
param databaseSkuFamily string = 'Gen5'

@description('Database vCores (serverless: the maximum).')
param databaseCapacity int = 2

@description('Maximum database size in bytes; 0 = the SKU\'s default (use 0 for DTU SKUs such as Basic or S0-S2).')
param databaseMaxSizeBytes int = 34359738368

@description('Serverless minimum vCores, as a decimal string.')
param databaseMinCapacity string = '0.5'

@description('Serverless auto-pause delay in minutes (-1 = never).')
param databaseAutoPauseDelayMinutes int = 60

@description('Backup storage redundancy of the database.')
@allowed([
  'Local'
  'Zone'
  'Geo'
  'GeoZone'
])
param databaseBackupStorageRedundancy string = 'Local'

@description('Public IPv4 address admitted by the SQL firewall for the deploy steps (grant, schema); empty = none.')
param deployerIpAddress string = ''

// ----------------------------------------------------------------------------------------------------------
// Function app
// ----------------------------------------------------------------------------------------------------------

@description('Flex Consumption instance memory in MB.')
@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int = 2048

@description('Flex Consumption scale-out limit per function group (the HTTP functions scale out to it together; each timer runs as a singleton). Flex refuses values below 40 in most regions; at most 1000.')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 40

@description('Concurrent HTTP invocations per instance (0 = platform default). Raise it when many clients long-poll GET /api/responses.')
@minValue(0)
@maxValue(1000)
param httpPerInstanceConcurrency int = 0

@description('QUEUES: comma-separated worker queues that accept publishes.')
param queues string = 'worker'

@description('CALLBACK_ALLOWED_HOSTS: comma-separated host names recovery callbacks may target; empty = none.')
param callbackAllowedHosts string = ''

@description('Value for CALLBACK_SIGNING_SECRET, stored in Key Vault. Empty = keep the stored one (deploy.sh generates one on the first deployment).')
@secure()
param callbackSigningSecret string = ''

@description('WORKER_FORWARD_URL: when set, worker jobs are POSTed here; empty = the echo sample handler.')
param workerForwardUrl string = ''

@description('More app settings, e.g. { "DRAIN_BUDGET_SECONDS": "6", "LOG_LEVEL": "debug" } (names from the README configuration table).')
param additionalAppSettings object = {}

// ----------------------------------------------------------------------------------------------------------
// Monitoring
// ----------------------------------------------------------------------------------------------------------

@description('E-mail address for alert notifications; empty = no action group.')
param alertEmail string = ''

@description('Alert threshold: oldest ready job age in seconds.')
@minValue(1)
param oldestReadyAgeThresholdSeconds int = 300

@description('Alert threshold: dead-lettered jobs per queue in 15 minutes (alerts above it).')
@minValue(0)
param deadLetterThreshold int = 0

@description('Accept only Entra-authenticated telemetry in Application Insights (see modules/monitoring.bicep before enabling).')
param appInsightsDisableLocalAuth bool = false

@description('Key Vault purge protection (irreversible once enabled).')
param keyVaultPurgeProtection bool = false

@description('Opt-in announce of T-SQL publishes (docs/outbox.md): the SQL server gets a system-assigned identity with Storage Queue Data Message Sender on the drain-request queue, and the schema step runs `npm run schema -- announce`, so a job published from T-SQL starts within seconds instead of at the 5-minute safety net.')
param announceTSqlPublishes bool = false

// ----------------------------------------------------------------------------------------------------------
// Names: <kind>-<prefix>-<token>, the token unique per subscription + resource group + prefix (modules/names.bicep,
// which infra/deploy.sh also deploys alone to learn the names before the real deployment).
// ----------------------------------------------------------------------------------------------------------

module naming 'modules/names.bicep' = {
  name: 'names'
  params: {
    namePrefix: namePrefix
  }
}

module identity 'modules/identity.bicep' = {
  name: 'identity'
  params: {
    name: naming.outputs.identity
    location: location
    tags: tags
  }
}

module storage 'modules/storage.bicep' = {
  name: 'storage'
  params: {
    name: naming.outputs.storage
    location: location
    tags: tags
    deploymentContainerName: naming.outputs.deploymentContainer
    principalId: identity.outputs.principalId
    sqlServerPrincipalId: announceTSqlPublishes ? sql.outputs.principalId : ''
  }
}

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  params: {
    logAnalyticsName: naming.outputs.logAnalytics
    appInsightsName: naming.outputs.appInsights
    location: location
    tags: tags
    disableLocalAuth: appInsightsDisableLocalAuth
    principalId: identity.outputs.principalId
  }
}

module sql 'modules/sql.bicep' = {
  name: 'sql'
  params: {
    serverName: naming.outputs.sqlServer
    databaseName: databaseName
    location: location
    tags: tags
    adminLogin: sqlAdminLogin
    adminObjectId: sqlAdminObjectId
    adminPrincipalType: sqlAdminPrincipalType
    serverExists: sqlServerExists
    skuName: databaseSkuName
    skuTier: databaseSkuTier
    skuFamily: databaseSkuFamily
    skuCapacity: databaseCapacity
    maxSizeBytes: databaseMaxSizeBytes
    minCapacity: databaseMinCapacity
    autoPauseDelayMinutes: databaseAutoPauseDelayMinutes
    backupStorageRedundancy: databaseBackupStorageRedundancy
    clientIpAddress: deployerIpAddress
    systemAssignedIdentity: announceTSqlPublishes
  }
}

module keyVault 'modules/keyvault.bicep' = {
  name: 'keyvault'
  params: {
    name: naming.outputs.keyVault
    location: location
    tags: tags
    principalId: identity.outputs.principalId
    callbackSigningSecret: callbackSigningSecret
    purgeProtection: keyVaultPurgeProtection
  }
}

module functionApp 'modules/function-app.bicep' = {
  name: 'function-app'
  params: {
    planName: naming.outputs.plan
    appName: naming.outputs.functionApp
    location: location
    tags: tags
    identityId: identity.outputs.id
    identityClientId: identity.outputs.clientId
    storageAccountName: storage.outputs.name
    drainRequestQueue: storage.outputs.drainRequestQueue
    deploymentContainerUrl: storage.outputs.deploymentContainerUrl
    appInsightsConnectionString: monitoring.outputs.connectionString
    instanceMemoryMB: instanceMemoryMB
    maximumInstanceCount: maximumInstanceCount
    httpPerInstanceConcurrency: httpPerInstanceConcurrency
    sqlServerFqdn: sql.outputs.fullyQualifiedDomainName
    sqlDatabaseName: sql.outputs.databaseName
    queues: queues
    callbackAllowedHosts: callbackAllowedHosts
    callbackSigningSecretUri: keyVault.outputs.callbackSigningSecretUri
    workerForwardUrl: workerForwardUrl
    additionalAppSettings: additionalAppSettings
  }
}

module observability 'modules/observability.bicep' = {
  name: 'observability'
  params: {
    appInsightsId: monitoring.outputs.appInsightsId
    location: location
    tags: tags
    namePrefix: naming.outputs.prefix
    alertEmail: alertEmail
    oldestReadyAgeThresholdSeconds: oldestReadyAgeThresholdSeconds
    deadLetterThreshold: deadLetterThreshold
  }
}

// Outputs read by infra/deploy.sh (names in UPPER_CASE so they can be exported as they are).
output FUNCTION_APP_NAME string = functionApp.outputs.name
output FUNCTION_APP_HOST string = functionApp.outputs.defaultHostName
output SQL_SERVER string = sql.outputs.fullyQualifiedDomainName
output SQL_SERVER_NAME string = sql.outputs.serverName
output SQL_DATABASE string = sql.outputs.databaseName
output APP_IDENTITY_NAME string = identity.outputs.name
output APP_IDENTITY_CLIENT_ID string = identity.outputs.clientId
output KEY_VAULT_NAME string = keyVault.outputs.name
output APPLICATIONINSIGHTS_NAME string = monitoring.outputs.appInsightsName
// the announce's queue (`npm run schema -- announce --queue-url`); empty when announceTSqlPublishes is off
output ANNOUNCE_QUEUE_URL string = announceTSqlPublishes ? '${storage.outputs.queueEndpoint}${storage.outputs.drainRequestQueue}' : ''
